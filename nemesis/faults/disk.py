"""A full disk (`disk-full`: writes that add a byte fail with ENOSPC, on
the lose-unfsynced filesystem, harness/lazyfs.py) until `disk-space` gives
it room again. A correct node may stop on a failed write (fail-stop); one
that stopped on its own is started again once the disk has room, and so is
one whose write failed just before the room came back (`mend`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from .family import Family

if TYPE_CHECKING:
    from nemesis.executor import Nemesis


def fill(nemesis: Nemesis, f: str, args: dict[str, Any]) -> list[str]:
    nodes = nemesis.aimed(args)
    for node in nodes:
        nemesis.cluster.fill_disk(node)
        nemesis.full.add(node)
        nemesis.were_full.add(node)
    return nodes


def give_room(nemesis: Nemesis, f: str = "disk-space", args: dict[str, Any] | None = None) -> list[str]:
    """Full disks given room again; a node that stopped on its full disk
    (not one the nemesis took down) is started again."""
    freed = sorted(nemesis.full)
    for node in freed:
        nemesis.cluster.fill_disk(node, full=False)
    _start_stopped(nemesis, freed)
    nemesis.full.clear()
    return freed


def mend(nemesis: Nemesis) -> list[str]:
    """Start again the nodes whose disk was full that have stopped, though
    the nemesis did not take them down: a write that failed just before
    `give_room` halts its node a moment after (`give_room` saw it still
    running). What the node logged of it stays for the checkers."""
    return _start_stopped(nemesis, nemesis.were_full - nemesis.full)


def _start_stopped(nemesis: Nemesis, nodes: Iterable[str]) -> list[str]:
    """Of `nodes`, those stopped on their own (not taken down or removed by the nemesis), started again."""
    held = nemesis.down | nemesis.removed
    started = [node for node in sorted(nodes) if node not in held and not nemesis.cluster.running(node)]
    for node in started:
        nemesis.cluster.start(node)
    return started


FAMILY = Family(makes={"disk-full": fill, "disk-space": give_room}, heals=(("disks", give_room),), mend=mend)
