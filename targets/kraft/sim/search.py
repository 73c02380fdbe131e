"""The nemesis's strategies over the simulation: `splitbrain simulate
--search novelty` drives the simulated cluster with the same novelty
search a run uses (nemesis/novelty.py), reading the simulated nodes'
statuses as a run reads the real ones', so the cheap search and the real
one learn in the same terms (abstract states, and actions named by fault
and role) and can share one memory file.

`SimNemesis` makes nemesis operations on a simulation as the executor makes
them on real nodes: aimed by role when made, partitions by topology, brief
faults sized by the simulator's election timeout and over before the next
step (a stall pauses the node and resumes it; a flicker cuts its links and
heals them, again and again), clock faults as jumps (the simulation sets a
clock off true time; it does not skew one). Each fault's coverage cell is
kept, and each operation with its moment (`ops`), which is the schedule a
violation is reported with.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable, Generator, Iterator
from typing import Any

from history.coverage import cell, role_of
from history.faults import BY_NAME
from history.observation import Observation
from history.operations import NemesisOp
from nemesis import topologies
from nemesis.faults import clock
from nemesis.guided import Guide
from nemesis.novelty import STEPS_PER_INTERVAL, Memory, Search, search_turns

from .invariants import InvariantViolation
from .simulation import LoadedRun, SimSettings, Simulation, random_steps, run_schedule, settle

# The simulated cluster's load runs this long before the first fault (a run waits for a leader).
SETTLE_MS = 2000
# What the search makes on the simulation, and how often it chooses (an interval; it steps three times in one).
KINDS = ("partition", "pause", "kill", "bounce", "flicker", "stall")
INTERVAL_S = 1.0


def _resume_paused(sim: Simulation) -> None:
    for node in sorted(sim.paused):
        sim.resume(node)


def _start_downed(sim: Simulation) -> None:
    for node, core in sim.nodes.items():
        if core is None:
            sim.start(node)


def _reset_clocks(sim: Simulation) -> None:
    sim.clock_ms = dict.fromkeys(sim.ids, 0)


# What each recovery operation undoes in the simulation, as the real
# executor's does: `heal` the links only, `resume` the paused nodes only.
RELEASES: dict[str, Callable[[Simulation], None]] = {
    "resume": _resume_paused,
    "start": _start_downed,
    "heal": Simulation.heal,
    "clock-reset": _reset_clocks,
}


class SimNemesis:
    """Nemesis operations carried out on a simulation, each fault's coverage cell kept."""

    def __init__(self, sim: Simulation) -> None:
        self.sim = sim
        self.load = LoadedRun(sim)
        self.in_force: list[str] = []
        self.cells: list[tuple[str, str, str]] = []
        self.ops: list[NemesisOp] = []
        self.now_ms = 0

    def states(self) -> dict[str, str]:
        return {
            n: core.state.name for n, core in self.sim.nodes.items() if core is not None and n not in self.sim.paused
        }

    def seen(self) -> Observation:
        """What a run's probe would say: each live node's state and status row, and who is held down."""
        states = self.states()
        rows = {n: self._row(n) for n in states}
        gone = {n: "pause" for n in self.sim.paused}
        gone.update({n: "kill" for n, core in self.sim.nodes.items() if core is None})
        return Observation(states, (), rows, gone)

    def _row(self, node: str) -> dict[str, Any]:
        core = self.sim.nodes[node]
        assert core is not None
        status = core.status()
        return {
            "state": status["state"],
            "epoch": status["epoch"],
            "offset": status["log_end_offset"],
            "synced": status["synced_offset"],
            "hwm": status["hwm"],
        }

    def run(self, ms: int) -> None:
        self.load.run(ms)
        self.now_ms += ms

    def aim(self, target: str, states: dict[str, str], rng: random.Random, count: int = 1) -> list[str]:
        """The executor's targets, on the simulation: by role (`count` followers), else any live node."""
        live = sorted(states)
        leader = self.sim.leader()
        holding = {
            "leader": [leader] if leader in live else [],
            "follower": [n for n in live if n != leader and role_of(states[n]) != "leader"],
            "candidate": [n for n in live if role_of(states[n]) == "candidate"],
        }.get(target, [])
        pool = holding or live
        return sorted(rng.sample(pool, min(count, len(pool))))

    def apply(self, op: NemesisOp) -> None:
        self.ops.append(NemesisOp(self.now_ms / 1000, op.f, op.args))
        if op.f in RELEASES:
            RELEASES[op.f](self.sim)
            self.in_force = [f for f in self.in_force if BY_NAME[f].recovery != op.f]
            return
        if op.f in ("heal-all", "rejoin"):
            self._heal()
            return
        states, rng = self.states(), random.Random(op.args.get("seed"))
        touched = self._fault(op, states, rng)
        found = cell(op.f, touched, states, self.in_force)
        self.cells.append((found["fault"], found["role"], found["with"]))
        if op.f in ("partition", "pause", "kill", "clock"):
            self.in_force.append(op.f)

    def _heal(self) -> None:
        for release in RELEASES.values():
            release(self.sim)
        self.in_force = []

    def _fault(self, op: NemesisOp, states: dict[str, str], rng: random.Random) -> list[Any]:
        sim, args = self.sim, op.args
        if op.f == "partition":
            aimed = self.aim(args["target"], states, rng)[0] if args.get("target") else None
            cut = topologies.links(topologies.aimed(args, list(sim.ids), rng, sim.leader(), aimed))
            sim.cut |= cut
            return [list(link) for link in cut]
        touched = self.aim(args.get("target", "one"), states, rng, args.get("count", 1))
        for node in touched:
            if op.f == "clock":
                sim.clock_ms[node] = clock.offset_ms(args, 0.0)
            elif op.f == "stall":
                sim.pause(node)
                self.run(args["for_ms"])
                sim.resume(node)
            elif op.f == "flicker":
                self._flicker(node, args)
            elif op.f == "pause":
                sim.pause(node)
            else:
                sim.crash(node, lose_unsynced=op.f == "lose-unfsynced")
                if op.f in ("bounce", "lose-unfsynced"):
                    sim.start(node)
        return touched

    def _flicker(self, node: str, args: dict[str, Any]) -> None:
        links = {(a, b) for a in self.sim.ids for b in self.sim.ids if a != b and node in (a, b)}
        for time_ in range(args.get("times", 1)):
            if time_:
                self.run(args["gap_ms"])
            made = links - self.sim.cut
            self.sim.cut |= made
            self.run(args["cut_ms"])
            self.sim.cut -= made


Step = tuple[float, NemesisOp | None]


def play(nemesis: SimNemesis, steps: Generator[Step, tuple[Observation, float], None]) -> None:
    """A strategy's steps (nemesis/turns.py's shape) made on the simulation,
    each answered with what the nodes say then."""
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


def searched(nemesis: SimNemesis, memory: Memory, kinds: tuple[str, ...], limit_s: float) -> None:
    """One schedule chosen by the novelty search as it goes, `limit_s` of
    simulated time after a leader is elected, then healed and quiesced as a
    random schedule is. A broken invariant raises (InvariantViolation) at the
    moment it breaks; the operations made until then are `nemesis.ops`,
    their moments from the end of SETTLE_MS."""
    settings = nemesis.sim.settings
    nemesis.run(SETTLE_MS)
    nemesis.now_ms = 0
    guide = Guide(
        random.Random(settings.seed), list(kinds), voters=settings.nodes, timeout_ms=settings.election_timeout_ms
    )
    play(nemesis, search_turns(Search(guide, memory), INTERVAL_S, limit_s))
    settle(nemesis.sim, nemesis.load)


def shrunk(settings: SimSettings, steps: list, violation: str) -> list:
    """A failing schedule without each step, last first, that the same
    kind of violation survives without, until none can go (the same seed:
    the simulation is deterministic, so what is left fails when run again)."""
    kept, dropped = list(steps), True
    while dropped:  # until no one step can go: each one left is needed
        dropped = False
        for index in range(len(kept) - 1, -1, -1):
            candidate = kept[:index] + kept[index + 1 :]
            try:
                run_schedule(settings, candidate)
            except InvariantViolation as found:
                if kind(str(found)) == kind(violation):
                    kept, dropped = candidate, True
    return kept


def kind(violation: str) -> str:
    """What broke, without when, where or which: `t=...ms: ` dropped, node
    ids and numbers as `#`, up to the first `: `."""
    what = re.sub(r"\b(n\d+|\d+)\b", "#", violation.split(": ", 1)[-1])
    return what.split(": ", 1)[0]


def one_schedule(
    settings: SimSettings, steps: int, membership: bool, memory: Memory | None, moments: bool = False
) -> tuple[dict[str, Any] | None, str]:
    """One schedule over the simulation (random steps, or, with `memory`, the
    novelty search's choices, learning into it): the violation it found (its
    seed, what broke, and its `steps` or its operations `ops`), or None; and
    what the simulated nodes did, for the digest."""
    try:
        if memory is None:
            plan = random_steps(
                random.Random(settings.seed),
                steps,
                membership=membership,
                power_losses=bool(settings.flush_interval_ms),
                moments=moments,
            )
            sim = run_schedule(settings, plan)
        else:
            kinds = KINDS + (("lose-unfsynced",) if settings.flush_interval_ms else ())
            nemesis = SimNemesis(Simulation(settings))
            searched(nemesis, memory, kinds, steps * INTERVAL_S / STEPS_PER_INTERVAL)
            sim = nemesis.sim
    except InvariantViolation as violation:
        made = (
            {"steps": plan, "shrunk": shrunk(settings, plan, str(violation))}
            if memory is None
            else {"ops": [{"at_s": round(op.at_s, 3), "f": op.f, "args": op.args} for op in nemesis.ops]}
        )
        return {"seed": settings.seed, "violation": str(violation), **made}, str(violation)
    return None, json.dumps(sim.events, sort_keys=True, default=str)
