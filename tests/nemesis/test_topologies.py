"""Partition topologies are pure functions to grudges; their properties hold for any cluster."""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st

from nemesis import topologies as t

CLUSTERS = st.integers(3, 9).map(lambda n: [f"n{i}" for i in range(1, n + 1)])


def reach(grudge, nodes, node):
    return {other for other in nodes if other not in grudge.get(node, frozenset())}


@given(CLUSTERS, st.data())
def test_isolate_cuts_one_node_both_ways(nodes, data):
    node = data.draw(st.sampled_from(nodes))
    cut = t.links(t.isolate(nodes, node))
    assert cut == {(node, o) for o in nodes if o != node} | {(o, node) for o in nodes if o != node}


@given(CLUSTERS.filter(lambda nodes: len(nodes) % 2), st.integers(0, 1000))
def test_halves_of_an_odd_cluster_leave_exactly_one_majority_side(nodes, seed):
    grudge = t.halves(nodes, random.Random(seed))
    sides = {frozenset(reach(grudge, nodes, n)) for n in nodes}
    assert len(sides) == 2
    assert sum(1 for side in sides if len(side) > len(nodes) // 2) == 1


@given(st.sampled_from([5, 7, 9]))
def test_majorities_ring_gives_everyone_a_different_majority(n):
    nodes = [f"n{i}" for i in range(n)]
    grudge = t.majorities_ring(nodes)
    seen = [frozenset(reach(grudge, nodes, node)) for node in nodes]
    assert all(len(s) > n // 2 for s in seen)
    assert len(set(seen)) == n


@given(CLUSTERS)
def test_bridge_node_sees_both_halves_that_cannot_see_each_other(nodes):
    grudge = t.bridge(nodes)
    middle = nodes[len(nodes) // 2]
    assert reach(grudge, nodes, middle) == set(nodes)
    left, right = nodes[0], nodes[-1]
    assert right not in reach(grudge, nodes, left) and left not in reach(grudge, nodes, right)


def test_flip_flop_is_kip_996s_topology():
    nodes = ["n1", "n2", "n3", "n4", "n5"]
    cut = t.links(t.flip_flop(nodes, leader="n3"))
    assert cut == {("n3", "n2"), ("n2", "n3"), ("n1", "n4"), ("n4", "n1")}


def test_one_way_cuts_one_direction():
    assert t.links(t.one_way("n1", "n2")) == {("n1", "n2")}


def test_one_way_aimed_at_a_follower_cuts_only_the_leader_to_it():
    grudge = t.make("one-way", ["n1", "n2", "n3"], random.Random(0), "n1", "n3")
    assert t.links(grudge) == {("n1", "n3")}


def test_one_way_aimed_to_the_leader_cuts_only_the_follower_to_it():
    """The leader deaf to a follower that still hears it: the follower's
    fetches and vote requests are lost, so it may be elected unheard by the
    leader (as the cell `leader-deaf` says); a deposed leader that another
    follower's fetches still reach then keeps its majority for a while."""
    args = {"topology": "one-way", "way": "to-leader"}
    assert t.links(t.aimed(args, ["n1", "n2", "n3"], random.Random(0), "n1", "n3")) == {("n3", "n1")}
    assert t.links(t.aimed({"topology": "one-way"}, ["n1", "n2", "n3"], random.Random(0), "n1", "n3")) == {("n1", "n3")}


@given(CLUSTERS, st.data())
def test_a_muted_leader_hears_everyone_and_nobody_hears_it(nodes, data):
    leader = data.draw(st.sampled_from(nodes))
    grudge = t.make("mute-leader", nodes, random.Random(0), leader)
    assert t.links(grudge) == {(leader, o) for o in nodes if o != leader}


@given(CLUSTERS, st.data())
def test_an_orphan_loses_only_its_leader(nodes, data):
    leader, node = data.draw(st.lists(st.sampled_from(nodes), min_size=2, max_size=2, unique=True))
    grudge = t.make("orphan", nodes, random.Random(0), leader, node)
    assert t.links(grudge) == {(node, leader), (leader, node)}
    assert t.two_way("orphan", nodes) and not t.two_way("mute-leader", nodes)
