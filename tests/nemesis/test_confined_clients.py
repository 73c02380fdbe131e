"""A partition cuts clients off with their nodes: the nodes that talk with
no majority (reach and hear, under every cut in force) keep their share of the clients (at least one, or as many as a
translated schedule names; at most half of them), each able to reach only
a node on that side, until the links heal. Every strategy's partitions do
so alike: it is how a network splits, not a recipe for a bug (a stale read
needs a client that can reach only a cut-off leader)."""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st

from history.observation import Observation
from history.operations import NemesisOp
from nemesis.executor import Nemesis
from nemesis.guided import Guide

TOPOLOGIES = ("isolate-leader", "isolate", "halves", "majorities-ring", "bridge", "mute-leader")


class Cluster:
    """Nodes that say who leads (n1)."""

    def __init__(self, nodes: int) -> None:
        self.ids = [f"n{i}" for i in range(1, nodes + 1)]

    def status(self, node: str, timeout_s: float | None = None) -> dict:
        return {"state": "leader" if node == "n1" else "follower", "epoch": 3}

    def set_clock(self, node: str, offset_ms: int) -> None:
        raise AssertionError("no clock was moved")


class Links:
    """Links that are only cut and healed."""

    def __init__(self) -> None:
        self.down: set = set()

    def cut(self, links):
        self.down |= set(links)
        return sorted(links)

    def heal(self) -> None:
        self.down.clear()


@given(
    nodes=st.integers(3, 7),
    clients=st.integers(0, 9),
    count=st.integers(0, 4),
    topology=st.sampled_from(TOPOLOGIES),
    seed=st.integers(0, 2**31 - 1),
    heal=st.sampled_from(["heal", "heal-all"]),
)
def test_clients_are_left_only_beside_nodes_that_talk_with_no_majority_and_only_until_the_links_heal(
    nodes, clients, count, topology, seed, heal
):
    cluster, links = Cluster(nodes), Links()
    nemesis = Nemesis(cluster, links, recorder=None, rng=random.Random(seed), clients=clients)
    nemesis.perform(NemesisOp(0.0, "partition", {"topology": topology, "clients": count, "seed": seed}))
    minority = {n for n in cluster.ids if len(talks_with(n, cluster.ids, links.down)) <= nodes // 2}
    assert set(nemesis.confined.values()) <= minority
    share = max(1, count, round(clients * len(minority) / nodes))
    assert len(nemesis.confined) == (min(share, clients // 2) if minority else 0)
    assert set(nemesis.confined) <= set(range(clients))
    if topology == "isolate-leader" and nemesis.confined:
        assert set(nemesis.confined.values()) == {"n1"}
    nemesis.perform(NemesisOp(1.0, heal, {}))
    assert nemesis.confined == {} and links.down == set()


def talks_with(node: str, ids: list[str], down: set) -> set[str]:
    return {other for other in ids if other == node or ((node, other) not in down and (other, node) not in down)}


def test_partitions_made_one_after_another_confine_clients_by_what_they_cut_together():
    """A follower deaf to the leader, then the leader deaf to the other
    follower: each cut alone leaves every node a majority it talks with,
    together they leave the leader none (it reaches only one follower and
    hears only the other), so clients are left beside it."""
    cluster, links = Cluster(3), Links()
    nemesis = Nemesis(cluster, links, recorder=None, rng=random.Random(0), clients=4)
    nemesis.perform(NemesisOp(0.0, "partition", {"links": [["n1", "n2"]]}))
    assert nemesis.confined == {}
    nemesis.perform(NemesisOp(1.0, "partition", {"links": [["n3", "n1"]]}))
    assert set(nemesis.confined.values()) == {"n1"} and 1 <= len(nemesis.confined) <= 2
    nemesis.perform(NemesisOp(2.0, "heal", {}))
    assert nemesis.confined == {}


def test_no_strategy_names_clients_for_a_partition_and_a_cut_off_leader_is_held_two_intervals():
    """Clients beside a cut-off node are the executor's rule for every
    partition; no guided choice asks for them (they were stale-read's recipe)."""
    guide = Guide(random.Random(0), ["partition"], voters=5)
    seen = Observation({"n1": "leader", "n2": "follower", "n3": "follower"})
    assert all("clients" not in c.args for c in guide.choices(seen))
    cut_off = [c for c in guide.choices(seen) if c.cell[1] == "leader-cut-off"]
    assert guide.held_s(cut_off[0], 3.0) == 6.0
    assert {guide.held_s(c, 3.0) for c in guide.choices(seen) if c.cell[1] != "leader-cut-off"} == {3.0}
