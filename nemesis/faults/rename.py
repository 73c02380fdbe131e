"""A simulated schedule's node names put on the real nodes (`rename`, made
by `splitbrain replay` and the simulator's translation, never drawn): the
node that led in the simulation when its faults began is the real leader
now, so each later step that names a node hits the one in the same role."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .family import Family

if TYPE_CHECKING:
    from nemesis.executor import Nemesis


def rename(nemesis: Nemesis, f: str, args: dict[str, Any]) -> list[list[str]]:
    """The simulated leader and the real one swapped in the executor's names; the pairs renamed."""
    real, simulated = nemesis.leader(), str(args["leader"])
    nemesis.names = {simulated: real, real: simulated} if real and real != simulated else {}
    return [[name, node] for name, node in sorted(nemesis.names.items())]


FAMILY = Family(makes={"rename": rename})
