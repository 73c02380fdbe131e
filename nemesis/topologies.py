"""Partitions as plain data (Jepsen's "grudges"), made by pure functions.

A grudge maps a node to the nodes it must not reach: `{a: {b}}` cuts the
directed link a->b only. `links(grudge)` is the set of directed links to cut;
only the appliers (link proxies, iptables) turn it into a fault.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from history.errors import SettingError

Grudge = dict[str, frozenset[str]]
Link = tuple[str, str]


def links(grudge: Grudge) -> set[Link]:
    return {(src, dst) for src, dsts in grudge.items() for dst in dsts}


def from_links(cut: set[Link]) -> Grudge:
    grudge: dict[str, set[str]] = {}
    for src, dst in cut:
        grudge.setdefault(src, set()).add(dst)
    return {src: frozenset(dsts) for src, dsts in grudge.items()}


def complete(components: Sequence[Sequence[str]]) -> Grudge:
    """Every node cut off (both ways) from every node outside its component."""
    grudge = {}
    everyone = {node for component in components for node in component}
    for component in components:
        for node in component:
            grudge[node] = frozenset(everyone - set(component))
    return grudge


def isolate(nodes: Sequence[str], node: str) -> Grudge:
    """One node cut off from all the others, both ways."""
    return complete([[node], [n for n in nodes if n != node]])


def halves(nodes: Sequence[str], rng: random.Random) -> Grudge:
    """A random minority and majority, cut from each other."""
    shuffled = list(nodes)
    rng.shuffle(shuffled)
    cut = len(nodes) // 2
    return complete([shuffled[:cut], shuffled[cut:]])


def majorities_ring(nodes: Sequence[str]) -> Grudge:
    """Each node sees a majority (itself and its nearest neighbours on a ring),
    but no two nodes see the same majority (Jepsen's majorities-ring)."""
    n = len(nodes)
    reach = n // 2
    grudge = {}
    for i, node in enumerate(nodes):
        near = {nodes[(i + d) % n] for d in range(-(reach // 2), reach - reach // 2 + 1)}
        grudge[node] = frozenset(set(nodes) - near)
    return grudge


def bridge(nodes: Sequence[str]) -> Grudge:
    """Two halves that cannot see each other, and one bridge node that sees both."""
    middle = len(nodes) // 2
    left, bridge_node, right = nodes[:middle], nodes[middle], nodes[middle + 1 :]
    grudge = complete([left, right])
    grudge[bridge_node] = frozenset()
    return grudge


def flip_flop(nodes: Sequence[str], leader: str) -> Grudge:
    """KIP-996's motivating 5-node topology: with leader 3, server 4 cannot
    reach the leader and server 5 cannot reach server 2 (both ways)."""
    if len(nodes) != 5:
        raise SettingError("topologies", "the flip-flop topology needs 5 nodes")
    server2, server4, server5 = [n for n in nodes if n != leader][:3]
    cut = {(leader, server4), (server4, leader), (server2, server5), (server5, server2)}
    return from_links(cut)


def one_way(src: str, dst: str) -> Grudge:
    """src's messages to dst are lost; dst still reaches src."""
    return {src: frozenset([dst])}


def mute(nodes: Sequence[str], node: str) -> Grudge:
    """Nobody hears `node`, and it still hears everyone: a leader muted so
    goes on taking fetches, and so believes it leads, while the others elect."""
    return {node: frozenset(n for n in nodes if n != node)}


def orphan(node: str, leader: str) -> Grudge:
    """`node` and the leader cut from each other, both ways, and nothing else:
    a follower that loses its leader while it still reaches the others."""
    return complete([[node], [leader]])


def aimed(
    args: dict[str, Any], nodes: list[str], rng: random.Random, leader: str | None, node: str | None = None
) -> Grudge:
    """The grudge a partition operation's `args` ask for (its topology, and
    `way`: `to-leader` cuts an aimed follower's messages to the leader, the
    leader deaf to it, where a one-way cut is otherwise the leader's to it)."""
    return make(args["topology"], nodes, rng, leader, node, to_leader=args.get("way") == "to-leader")


def make(
    topology: str,
    nodes: list[str],
    rng: random.Random,
    leader: str | None,
    node: str | None = None,
    to_leader: bool = False,
) -> Grudge:
    """The grudge of a topology by name, its random choices from `rng`;
    `leader` is the leader now, if known; `node`, the node it is aimed at
    (by role), if any; `to_leader`, see `aimed`."""
    if topology == "isolate":
        return isolate(nodes, node or rng.choice(nodes))
    if topology == "mute-leader":
        return mute(nodes, leader or rng.choice(nodes))
    if topology == "orphan":
        leader = leader or rng.choice(nodes)
        return orphan(node or rng.choice([n for n in nodes if n != leader]), leader)
    if topology == "isolate-leader":
        return isolate(nodes, leader or rng.choice(nodes))
    if topology == "halves":
        return halves(nodes, rng)
    if topology in ("majorities-ring", "bridge"):
        shuffled = nodes[:]
        rng.shuffle(shuffled)
        return majorities_ring(shuffled) if topology == "majorities-ring" else bridge(shuffled)
    if topology == "flip-flop":
        return flip_flop(nodes, leader or nodes[2])
    if topology == "one-way":
        if node is not None and leader is not None and node != leader:
            # Aimed: a follower deaf to its leader, which still hears it; or the other way round.
            return one_way(node, leader) if to_leader else one_way(leader, node)
        src, dst = rng.sample(nodes, 2)
        return one_way(src, dst)
    raise SettingError("topologies", f"unknown topology {topology!r}")


def two_way(topology: str, nodes: list[str]) -> bool:
    """Whether the topology, on these nodes, cuts each pair of nodes both
    ways or not at all (whatever its random choices: they pick which nodes,
    not the shape), as links that can only be cut per pair need."""
    cut = links(make(topology, nodes, random.Random(0), nodes[0]))
    return all((dst, src) in cut for src, dst in cut)
