"""What one fault family's module declares (nemesis/faults/): for the
catalogue rows it makes (history/faults.py), how each operation is made on
a cluster, how the random schedule draws its arguments, which choices the
guided nemesis may aim, the risk those choices hold, and how `heal-all`
undoes what it left in force. The executor, the schedule and the guide read
these, so a fault's behaviour lives in its module and not in their branches.

Pure where it decides: draws and choices come from the caller's seeded
generator, in the order the module makes them.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from history.faults import AT_ONCE, BY_NAME
from history.observation import Observation
from history.operations import NemesisOp

if TYPE_CHECKING:
    from nemesis.executor import Nemesis
    from nemesis.simulated import SimNemesis

# What the random schedule aims a node fault at.
TARGETS = ("one", "leader", "minority")
# The roles the guided nemesis finds nodes in.
ROLES = ("leader", "follower", "candidate")
Cell = tuple[str, str, str]


@dataclass(frozen=True)
class Choice:
    """A fault the guided nemesis may make, and the coverage cell it would reach."""

    cell: Cell
    f: str
    args: dict[str, Any]


@dataclass(frozen=True)
class Drawing:
    """What the random schedule's draw of one fault knows: its generator, the
    topologies allowed, the target's election timeout (what brief faults are
    sized by) and the kinds of message its framing names."""

    rng: random.Random
    topologies: list[str]
    timeout_ms: int = 1000
    framed: tuple[str, ...] = ()


@dataclass(frozen=True)
class Aiming:
    """What the guided nemesis knows when it aims: its generator, what the
    nodes say now (`seen`, its coverage `context` and the `roles` held), the
    election timeout, the message kinds it aims at, the topologies allowed,
    whether only faults that cut no link may join those in force, and
    whether an election is open or opening (`electing`: a candidate seen, no
    leader seen, or a second fault made as a leader is lost)."""

    rng: random.Random
    seen: Observation
    context: str
    roles: list[str]
    timeout_ms: int = 1000
    framed: tuple[str, ...] = ()
    topologies: list[str] | None = None
    node_faults_only: bool = False
    electing: bool = False


def seed(rng: random.Random) -> int:
    return rng.randrange(2**31)


def drawn_target(kind: str, drawing: Drawing) -> dict[str, Any]:
    """A node fault aimed at a role drawn (one that may hit many nodes at once, a power loss, may also hit a majority, or all)."""
    aims = (*TARGETS, *AT_ONCE) if BY_NAME[kind].at_once else TARGETS
    return {"target": drawing.rng.choice(aims), "seed": seed(drawing.rng)}


def by_role(kind: str, aiming: Aiming) -> list[Choice]:
    """A node fault aimed at each role held now (one that may hit many at once also at a majority, and at all)."""
    many = AT_ONCE if BY_NAME[kind].at_once and len(aiming.seen.states) > 1 else ()
    return [
        Choice((kind, role, aiming.context), kind, {"target": role, "seed": seed(aiming.rng)})
        for role in (*aiming.roles, *many)
    ]


# The order `heal_all` undoes things in: clocks set right and disks given
# room first, paused nodes resumed before links heal (on Docker the links'
# rules live in the nodes), downed nodes started after, removed members last.
HEAL_ORDER = ("clocks", "disks", "paused", "links", "down", "members")

# The order `heal-all` undoes things in on a simulation: a paused node
# resumed first (it handles what it holds while the links are still as they
# were, as the simulator always has: seeds reproduce), downed nodes started,
# links healed, clocks set right.
SIMULATED_HEAL_ORDER = ("paused", "down", "links", "clocks")

Make = Callable[["Nemesis", str, dict[str, Any]], Any]
# How a fault is made on a simulated cluster (nemesis/simulated.py's SimNemesis): from the
# operation, its arguments, the live nodes' states and a generator seeded by it; what it touched.
SimMake = Callable[["SimNemesis", str, dict[str, Any], dict[str, str], random.Random], list[Any]]
Recipe = Callable[[random.Random, float, float], list[NemesisOp]]


@dataclass(frozen=True)
class Family:
    """One family's behaviour. `makes`: each operation it makes (its faults
    and what undoes them) and how, returning what it touched for the
    history row. `draw`: a `--nemesis` kind's arguments for the random
    schedule; `recipe`: for a kind that is several operations (churn, a
    voter change), those instead. `choices`: what the guided nemesis may
    aim of a kind now. `risk` and `hold`: by a choice's (fault, role),
    how risky it is and for how many intervals a turn holds it; `at_once`
    and `halfway`: second faults risky with a first in force, by (the
    first's role, fault, role). `turn`: a choice that makes several
    operations (None: just its own). `sharpen`: a choice made for its risk,
    reshaped. `opens`: what a turn it opens is called in the second faults'
    risk tables (else its cell's role). `undo`: what a turn that made it
    ends with (operation, arguments), before `heal-all`.
    `heals`: how the executor's `heal_all` undoes what the family left in
    force, each at its step of HEAL_ORDER, returning what it touched;
    `mend`: after the heal, nodes its faults stopped since, started again.
    `simulates` and `simulated_heals`: the same on a simulated cluster, for
    the faults a simulation takes (SIMULATED_HEAL_ORDER)."""

    makes: Mapping[str, Make]
    draw: Callable[[str, Drawing], dict[str, Any]] = drawn_target
    recipe: Mapping[str, Recipe] = field(default_factory=dict)
    choices: Callable[[str, Aiming], list[Choice]] = by_role
    risk: Mapping[tuple[str, str], int] = field(default_factory=dict)
    hold: Mapping[tuple[str, str], int] = field(default_factory=dict)
    at_once: Mapping[Cell, int] = field(default_factory=dict)
    halfway: Mapping[Cell, int] = field(default_factory=dict)
    turn: Callable[[Choice, random.Random, float, float, int], list[NemesisOp] | None] | None = None
    sharpen: Callable[[Choice, random.Random], Choice] | None = None
    opens: str = ""
    undo: tuple[tuple[str, dict[str, Any]], ...] = ()
    heals: tuple[tuple[str, Callable[[Nemesis], list[Any]]], ...] = ()
    mend: Callable[[Nemesis], list[str]] | None = None
    simulates: Mapping[str, SimMake] = field(default_factory=dict)
    simulated_heals: tuple[tuple[str, Callable[[SimNemesis], list[Any]]], ...] = ()
