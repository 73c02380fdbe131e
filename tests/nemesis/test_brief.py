"""Brief faults (nemesis/faults/brief.py): their timing is drawn within its bounds
of the target's election timeout, a flicker cuts only links no partition
holds and restores only its own, and a heal-all stops one under way."""

from __future__ import annotations

import random
import threading
import time

from hypothesis import given
from hypothesis import strategies as st

from history.observation import Observation
from history.operations import NemesisOp
from nemesis.executor import Nemesis
from nemesis.faults import brief
from nemesis.guided import Guide
from nemesis.schedule import generate


@given(kind=st.sampled_from(brief.KINDS), timeout_ms=st.integers(10, 10_000), seed=st.integers(0, 2**31 - 1))
def test_brief_faults_are_sized_by_the_election_timeout(kind, timeout_ms, seed):
    drawn = brief.draw(kind, random.Random(seed), timeout_ms)
    if kind == "flicker":
        assert timeout_ms / 10 - 1 <= drawn["cut_ms"] <= 2 * timeout_ms + 1
        assert 1 <= drawn["times"] <= 3
        assert timeout_ms / 4 - 1 <= drawn["gap_ms"] <= timeout_ms + 1
    else:
        assert timeout_ms / 2 - 1 <= drawn["for_ms"] <= 3 * timeout_ms + 1


def test_the_guide_and_the_schedule_aim_them_by_role_at_the_targets_timeout():
    seen = Observation({"n1": "leader", "n2": "follower", "n3": "follower"})
    choices = Guide(random.Random(1), ["flicker", "stall"], timeout_ms=200).choices(seen)
    assert {(c.f, c.cell[1]) for c in choices} == {(k, r) for k in brief.KINDS for r in ("leader", "follower")}
    assert all(c.args.get("cut_ms", c.args.get("for_ms")) <= 600 for c in choices)
    ops = generate(random.Random(1), ["flicker", "stall"], 20, 2, 3, timeout_ms=5000)
    made = [op for op in ops if op.f in brief.KINDS]
    assert {op.f for op in made} == set(brief.KINDS) and all(op.args["target"] in ("one", "leader") for op in made)
    assert any(op.args.get("cut_ms", op.args.get("for_ms", 0)) > 600 for op in made)


class Cluster:
    """Three nodes; n1 leads; pauses are only counted."""

    ids = ["n1", "n2", "n3"]

    def __init__(self) -> None:
        self.paused: list[str] = []

    def status(self, node: str, timeout_s: float | None = None) -> dict:
        return {"state": "leader" if node == "n1" else "follower", "epoch": 1}

    def pause(self, node: str) -> None:
        self.paused.append(node)

    def resume(self, node: str) -> None:
        self.paused.remove(node)


class Links:
    """Links cut and restored, with every cut remembered."""

    def __init__(self) -> None:
        self.links = [(i, j) for i in Cluster.ids for j in Cluster.ids if i != j]
        self.down: set = set()
        self.cuts: list[set] = []

    def cut(self, links):
        self.down |= set(links)
        self.cuts.append(set(links))
        return sorted(links)

    def restore(self, links) -> None:
        self.down -= set(links)

    def heal(self) -> None:
        self.down.clear()


def test_a_flicker_leaves_a_partitions_links_cut_and_restores_its_own():
    links = Links()
    nemesis = Nemesis(Cluster(), links, recorder=None, rng=random.Random(0))
    nemesis.perform(NemesisOp(0, "partition", {"topology": "isolate", "target": "follower", "seed": 5}))
    held = set(links.down)
    n2 = {link for link in links.links if "n2" in link}
    assert n2 & held and n2 - held  # the partition holds some of n2's links, not all
    touched = nemesis.perform(NemesisOp(0, "flicker", {"nodes": ["n2"], "cut_ms": 1, "times": 2, "gap_ms": 1}))
    assert touched == ["n2"]
    assert links.down == held
    assert links.cuts[1:] == [n2 - held, n2 - held]


def test_a_heal_all_stops_a_flicker_under_way_and_a_stall_after_it_resumes_nothing():
    cluster, links = Cluster(), Links()
    nemesis = Nemesis(cluster, links, recorder=None, rng=random.Random(0))
    flicker = threading.Thread(
        target=nemesis.perform,
        args=(NemesisOp(0, "flicker", {"nodes": ["n1"], "cut_ms": 300, "times": 3, "gap_ms": 1}),),
    )
    flicker.start()
    time.sleep(0.1)
    nemesis.heal_all()
    flicker.join()
    assert len(links.cuts) == 1 and links.down == set()

    stall = threading.Thread(target=nemesis.perform, args=(NemesisOp(0, "stall", {"nodes": ["n2"], "for_ms": 300}),))
    stall.start()
    time.sleep(0.1)
    assert cluster.paused == ["n2"]
    nemesis.heal_all()
    stall.join()
    assert cluster.paused == [] and nemesis.paused == set()
