"""A disk lost (`wipe`): the node returns with an empty data directory, as
membership allows: a voter killed, wiped and started as an observer, to be
added again under its new directory id; a member removed first and added
back as a new one; a stream's replica scaled off. `rejoin` ends it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import nodes
from .changers.voters import VoterChanger
from .family import Family
from .membership import REJOIN, changes

if TYPE_CHECKING:
    from nemesis.executor import Nemesis


def wipe(nemesis: Nemesis, f: str, args: dict[str, Any]) -> list[str]:
    aimed = nemesis.aimed(args)
    membership = changes(nemesis)
    if not isinstance(membership, VoterChanger):  # a voter's wipe is a node fault of its own
        return membership.wipe(aimed)
    for node in aimed:
        wiped(nemesis, node)
    return aimed


def wiped(nemesis: Nemesis, node: str) -> None:
    """One voter's disk lost: killed, its data directory emptied, started again."""
    nodes.cycle(nemesis, node, nemesis.cluster.wipe)


FAMILY = Family(makes={"wipe": wipe}, undo=(REJOIN,))
