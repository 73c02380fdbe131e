"""The geometry of a cut: which nodes a set of cut links leaves unheard by a
majority, and the largest group that still hears one another. The
availability figures, the nemesis (whom a cut confines clients beside) and
the reference quorum's stuck rule all read it, so it sits on the ground
floor."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence


def unheard(cut: Iterable[tuple[str, ...]], node: str, nodes: Sequence[str]) -> bool:
    """Whether the links `cut` leave `node` unheard by a majority of `nodes`
    (cut off, or muted: nobody hears it); `node` counts as hearing itself."""
    links = set(cut)
    heard = [n for n in nodes if n == node or ((node, n) not in links and (n, node) not in links)]
    return len(heard) * 2 <= len(nodes)


def largest_connected(nodes: list[str], cut: Iterable[tuple[str, str]]) -> list[str]:
    """The most of `nodes` that all hear one another through `cut` (the
    first such set in their order): a majority of nodes that each hear a
    majority may still be split (a leader and one follower cut from each
    other, the rest whole), and Raft need not elect there."""
    links = set(cut)

    def joined(group: tuple[str, ...]) -> bool:
        return all((a, b) not in links and (b, a) not in links for a, b in itertools.combinations(group, 2))

    for size in range(len(nodes), 0, -1):
        for group in itertools.combinations(nodes, size):
            if joined(group):
                return list(group)
    return []
