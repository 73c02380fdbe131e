"""A stopped node's data file damaged (`corrupt`: a bit flipped, or bytes
cut off, at its log's tail or anywhere in blocks, snapshots or metadata;
the cluster's backend picks the file among those its target names), and
the node started. Its row names what was damaged."""

from __future__ import annotations

import random
from typing import TYPE_CHECKING, Any

from .family import Family

if TYPE_CHECKING:
    from nemesis.executor import Nemesis


def corrupt(nemesis: Nemesis, f: str, args: dict[str, Any]) -> list[Any]:
    """Each node aimed at killed, one of its files damaged (a schedule may
    name the kind of file and the mode: flip, truncate), and started."""
    rng = random.Random(args.get("seed"))
    touched: list[Any] = []
    for node in nemesis.aimed(args, rng):
        nemesis.cluster.kill(node)
        try:
            touched += [node, nemesis.cluster.corrupt(node, rng, args.get("kind"), args.get("mode"))]
        finally:  # a file that could not be damaged (none of the kind written yet) leaves the node as it was
            nemesis.cluster.start(node)
            nemesis.paused.discard(node)
            nemesis.down.discard(node)
    return touched


FAMILY = Family(makes={"corrupt": corrupt})
