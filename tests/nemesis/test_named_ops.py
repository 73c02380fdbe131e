"""What a translated simulated schedule asks of the executor: links cut as
named, a leader aimed at only if one leads, a node brought back by name, and
names put on the real nodes (`rename`: the simulation's leader is the real
one)."""

from __future__ import annotations

import random

from nemesis.executor import Nemesis
from nemesis.schedule import NemesisOp
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
