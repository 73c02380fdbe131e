"""The nemesis on a simulated cluster (`splitbrain simulate --search
novelty`): a target's simulation (targets/interface.py's
`SimulatedCluster`) driven by the same strategies a run uses, its faults
made as the executor makes them on real nodes (each family's `simulates`,
nemesis/faults/), and read back as a run's probes read the real nodes, so
the cheap search and the real one learn in the same terms (abstract states,
and actions named by fault and role) and can share one memory file.

Faults are aimed by role when made, partitions by topology; brief faults
are over before the next step (a stall pauses the node and resumes it; a
flicker cuts its links and heals them, again and again); clock faults are
jumps (a simulation sets a clock off true time; it does not skew one).
Each fault's coverage cell is kept, and each operation with its moment
(`ops`): the schedule a violation is reported with.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from history.coverage import cell, role_of
from history.errors import Defect
from history.faults import BOUNCE, BY_NAME, HEAL_ALL, KILL, LOSE_UNFSYNCED, PARTITION, PAUSE
from history.observation import Observation
from history.operations import NemesisOp

from .faults import SIMULATED_HEALS, brief, family_of
from .guided import Guide
from .novelty import STEPS_PER_INTERVAL, Memory, Search
from .strategy import Novelty
from .turns import Step, Steps

# What the novelty search makes on a simulation: link and node faults (and
# power losses, where the simulated nodes lose what they had not flushed).
SEARCHED = (PARTITION, PAUSE, KILL, BOUNCE, *brief.KINDS)

if TYPE_CHECKING:
    from targets.interface import SimulatedCluster


class SimNemesis:
    """Nemesis operations carried out on a simulated cluster, each fault's coverage cell kept."""

    def __init__(self, cluster: SimulatedCluster, ops: list[NemesisOp] | None = None) -> None:
        self.cluster = cluster
        self.in_force: list[str] = []
        self.cells: list[tuple[str, str, str]] = []
        self.ops: list[NemesisOp] = [] if ops is None else ops
        self.now_ms = 0

    def seen(self) -> Observation:
        """What a run's probe would say: each live node's state and status row, and who is held down."""
        cluster = self.cluster
        states = cluster.states()
        gone = dict.fromkeys(cluster.paused, PAUSE)
        gone.update(dict.fromkeys(cluster.down(), KILL))
        return Observation(states, (), cluster.status_rows(), gone)

    def run(self, ms: int) -> None:
        self.cluster.run(ms)
        self.now_ms += ms

    def aimed(self, args: dict[str, Any], states: dict[str, str], rng: random.Random) -> list[str]:
        """The nodes an operation aims at (its `target`, `count` of them), as the executor's `aimed`."""
        return self.aim(args.get("target", "one"), states, rng, args.get("count", 1))

    def aim(self, target: str, states: dict[str, str], rng: random.Random, count: int = 1) -> list[str]:
        """The executor's targets, on the simulation: by role (`count` followers), else any live node."""
        live = sorted(states)
        leader = self.cluster.leader()
        holding = {
            "leader": [leader] if leader in live else [],
            "follower": [n for n in live if n != leader and role_of(states[n]) != "leader"],
            "candidate": [n for n in live if role_of(states[n]) == "candidate"],
        }.get(target, [])
        pool = holding or live
        return sorted(rng.sample(pool, min(count, len(pool))))

    def apply(self, op: NemesisOp) -> None:
        self.ops.append(NemesisOp(self.now_ms / 1000, op.f, op.args))
        if op.f == HEAL_ALL:
            for heal in SIMULATED_HEALS:
                heal(self)
            self.in_force = []
            return
        make = family_of(op.f).simulates.get(op.f)
        if make is None:
            raise Defect(f"the simulation makes no {op.f!r}")
        states, rng = self.cluster.states(), random.Random(op.args.get("seed"))
        touched = make(self, op.f, op.args, states, rng)
        fault = BY_NAME.get(op.f)
        if fault is None:  # a recovery: the faults it ends are no longer in force
            self.in_force = [f for f in self.in_force if BY_NAME[f].recovery != op.f]
            return
        found = cell(op.f, touched, states, self.in_force)
        self.cells.append((found["fault"], found["role"], found["with"]))
        if not fault.instant:
            self.in_force.append(op.f)


def play(nemesis: SimNemesis, steps: Steps) -> None:
    """A strategy's steps made on the simulation, each answered with what the nodes say then."""
    for at_s, op in driven(steps, lambda: (nemesis.seen(), nemesis.now_ms / 1000)):
        nemesis.run(max(0, int(at_s * 1000) - nemesis.now_ms))
        if op is not None:
            nemesis.apply(op)


def driven(steps: Generator[Step, Any, None], seen: Callable[[], Any]) -> Iterator[Step]:
    """A strategy's steps, each answered with `seen()` once it is made."""
    try:
        step = next(steps)
        while True:
            yield step
            step = steps.send(seen())
    except StopIteration:
        return


@dataclass
class NoveltySearch:
    """The novelty search as a simulation takes it (targets/interface.py's
    `SimulatedSearch`): one schedule's faults chosen as it goes, every
    schedule learning into the same memory."""

    memory: Memory
    name: str = "novelty"
    steps_per_interval: int = STEPS_PER_INTERVAL

    def play(self, cluster: SimulatedCluster, seed: int, interval_s: float, limit_s: float) -> None:
        """The search's schedule from `seed` on `cluster` until `limit_s`, each
        operation made written into the cluster's `ops` as it is made (so a
        broken invariant, raised from the cluster's `run`, leaves them there):
        SEARCHED's faults, and power losses where the cluster's nodes lose
        what they had not flushed."""
        kinds = [*SEARCHED, *([LOSE_UNFSYNCED] if cluster.loses_unflushed else [])]
        guide = Guide(random.Random(seed), kinds, voters=cluster.voters, timeout_ms=cluster.timeout_ms)
        nemesis = SimNemesis(cluster, cluster.ops)
        play(nemesis, Novelty(Search(guide, self.memory)).steps(interval_s, limit_s))
