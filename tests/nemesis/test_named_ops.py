"""What a translated simulated schedule asks of the executor: links cut as
named, a leader aimed at only if one leads, a node brought back by name, and
names put on the real nodes (`rename`: the simulation's leader is the real
one)."""

from __future__ import annotations

import random

from history.operations import NemesisOp
from nemesis.executor import Nemesis
from tests.nemesis.test_brief import Cluster, Links


class Leaderless(Cluster):
    def status(self, node: str, timeout_s: float | None = None) -> dict:
        return {"state": "follower", "epoch": 1}


def nemesis(cluster: Cluster) -> tuple[Nemesis, Links]:
    links = Links()
    return Nemesis(cluster, links, recorder=None, rng=random.Random(0)), links


def test_names_follow_the_simulations_leader_onto_the_real_one():
    made, links = nemesis(Cluster())  # n1 leads
    assert made.perform(NemesisOp(0, "rename", {"leader": "n3"})) == [["n1", "n3"], ["n3", "n1"]]
    made.perform(NemesisOp(0, "partition", {"links": [["n3", "n2"]]}))
    assert links.down == {("n1", "n2")}
    assert made.perform(NemesisOp(0, "pause", {"nodes": ["n3"]})) == ["n1"]
    assert made.perform(NemesisOp(0, "resume", {"nodes": ["n2"]})) == []
    assert made.perform(NemesisOp(0, "resume", {"nodes": ["n3"]})) == ["n1"]
    assert made.perform(NemesisOp(0, "rename", {"leader": "n1"})) == [] and made.named("n3") == "n3"


def test_a_step_aimed_at_the_leader_does_nothing_when_none_leads():
    made, links = nemesis(Leaderless())
    only = {"target": "leader", "only_a_leader": True}
    assert made.perform(NemesisOp(0, "pause", only)) == []
    assert made.perform(NemesisOp(0, "partition", {"topology": "isolate-leader", "only_a_leader": True})) == []
    assert links.down == set() and made.paused == set()
    assert len(made.perform(NemesisOp(0, "pause", {"target": "leader", "seed": 1}))) == 1  # the guided aim: anyone


class Disks(Cluster):
    """Disks filled and files damaged, as the executor asks; nodes killed and started."""

    def kill(self, node: str) -> None: ...

    def start(self, node: str) -> None: ...

    def fill_disk(self, node: str) -> None: ...

    def corrupt(self, node: str, rng: random.Random, kind: str | None, mode: str | None = None) -> dict:
        return {"kind": "log", "file": "log.bin", "mode": "flip", "at": 0}


class Clock:
    """A recorder's clock: 100 ns later at each reading."""

    def __init__(self) -> None:
        self.ns = 0

    def now_ns(self) -> int:
        self.ns += 100
        return self.ns


def test_the_nodes_a_damaging_fault_hits_are_noted_with_when_once_it_is_made():
    made = Nemesis(Disks(), Links(), recorder=Clock(), rng=random.Random(0))
    made.perform(NemesisOp(0, "kill", {"nodes": ["n3"]}))
    made.perform(NemesisOp(0, "corrupt", {"nodes": ["n2"]}))
    made.perform(NemesisOp(0, "disk-full", {"nodes": ["n1"]}))
    assert made.damaged == {"n2": 100, "n1": 200}  # the corrupt row's damage description is not a node


class Halting(Disks):
    """Disks filled and given room; nodes killed and started, and stopped by hand (as one whose write failed is)."""

    def __init__(self) -> None:
        super().__init__()
        self.stopped: set[str] = set()
        self.started: list[str] = []

    def fill_disk(self, node: str, full: bool = True) -> None: ...

    def kill(self, node: str) -> None:
        self.stopped.add(node)

    def start(self, node: str) -> None:
        self.stopped.discard(node)
        self.started.append(node)

    def running(self, node: str) -> bool:
        return node not in self.stopped


def test_a_node_that_halts_on_its_full_disk_just_after_the_heal_gave_it_room_is_started_again():
    cluster = Halting()
    made = Nemesis(cluster, Links(), recorder=Clock(), rng=random.Random(0))
    made.perform(NemesisOp(0, "disk-full", {"nodes": ["n2"]}))
    made.perform(NemesisOp(0, "kill", {"nodes": ["n3"]}))
    made.heal_all()  # n2 still runs here: its write failed a moment ago, and it halts just after
    assert cluster.started == ["n3"]
    cluster.stopped |= {"n2", "n1"}  # n1 stops too, but its disk was never full: not ours to start
    assert made.start_stopped() == ["n2"]
    assert cluster.started == ["n3", "n2"] and cluster.running("n2") and not cluster.running("n1")
    assert made.start_stopped() == []
