"""One simulated schedule (`splitbrain simulate`): random steps drawn from
the seed, or the faults a strategy the shell hands over chooses as it goes
(targets/interface.py's `SimulatedSearch`: the novelty search, made on the
cluster by nemesis/simulated.py). For the latter the simulation is a
`SimulatedCluster` (`SimCluster`): what a run's probe would read of each
node, and the simulation's own steps for the nemesis to make its faults
with. A failing random schedule is shrunk to the steps its violation needs.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import replace
from typing import Any

from targets.interface import SimulatedSearch

from .invariants import InvariantViolation
from .simulation import LoadedRun, SimSettings, Simulation, random_steps, run_schedule, settle

# The simulated cluster's load runs this long before the first fault (a run waits for a leader).
SETTLE_MS = 2000
# How long an interval of a search is (it chooses a few times in one).
INTERVAL_S = 1.0


class SimCluster:
    """A Simulation and its client load as targets/interface.py's `SimulatedCluster`."""

    def __init__(self, sim: Simulation) -> None:
        self.sim = sim
        self.load = LoadedRun(sim)
        self.ids = sim.ids
        self.voters = sim.settings.nodes
        self.ops: list[Any] = []
        self.timeout_ms = sim.settings.election_timeout_ms
        self.loses_unflushed = bool(sim.settings.flush_interval_ms)

    @property
    def cut(self) -> set[tuple[str, str]]:
        return self.sim.cut

    @property
    def paused(self) -> set[str]:
        return self.sim.paused

    def leader(self) -> str | None:
        return self.sim.leader()

    def states(self) -> dict[str, str]:
        sim = self.sim
        return {n: core.state.name for n, core in sim.nodes.items() if core is not None and n not in sim.paused}

    def status_rows(self) -> dict[str, dict[str, Any]]:
        rows = {}
        for node in self.states():
            core = self.sim.nodes[node]
            assert core is not None
            status = core.status()
            rows[node] = {
                "state": status["state"],
                "epoch": status["epoch"],
                "offset": status["log_end_offset"],
                "synced": status["synced_offset"],
                "hwm": status["hwm"],
            }
        return rows

    def down(self) -> list[str]:
        return [node for node, core in self.sim.nodes.items() if core is None]

    def run(self, ms: int) -> None:
        self.load.run(ms)

    def pause(self, node: str) -> None:
        self.sim.pause(node)

    def resume(self, node: str) -> None:
        self.sim.resume(node)

    def crash(self, node: str, lose_unsynced: bool = False) -> None:
        self.sim.crash(node, lose_unsynced=lose_unsynced)

    def start(self, node: str) -> None:
        self.sim.start(node)

    def heal(self) -> None:
        self.sim.heal()

    def set_clock(self, node: str, offset_ms: int) -> None:
        self.sim.clock_ms[node] = offset_ms


def searched(cluster: SimCluster, search: SimulatedSearch, limit_s: float) -> None:
    """One schedule chosen by `search` as it goes, `limit_s` of simulated
    time after a leader is elected, then healed and quiesced as a random
    schedule is. A broken invariant raises (InvariantViolation) at the
    moment it breaks; the operations made until then are `cluster.ops`,
    their moments from the end of SETTLE_MS."""
    cluster.run(SETTLE_MS)
    search.play(cluster, cluster.sim.settings.seed, INTERVAL_S, limit_s)
    settle(cluster.sim, cluster.load)


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


# A failing schedule is run again under this many other seeds' timings,
# this far apart (away from a campaign's own, consecutive, seeds).
RETIMINGS, RETIME_STRIDE = 12, 1_000_003


def retimed(settings: SimSettings, steps: list, violation: str) -> int:
    """Under how many of RETIMINGS other seeds the same steps break the same
    kind of invariant. A seed decides every message's delay and every
    election timeout, and a real cluster keeps none of them: a violation
    that holds under most timings is one its steps make, and a replay on
    real nodes reaches it; one that holds under its own seed's alone turns
    on a delay a real run will not repeat."""
    held = 0
    for other in range(1, RETIMINGS + 1):
        try:
            run_schedule(replace(settings, seed=settings.seed + RETIME_STRIDE * other), steps)
        except InvariantViolation as found:
            held += kind(str(found)) == kind(violation)
    return held


def kind(violation: str) -> str:
    """What broke, without when, where or which: `t=...ms: ` dropped, node
    ids and numbers as `#`, up to the first `: `."""
    what = re.sub(r"\b(n\d+|\d+)\b", "#", violation.split(": ", 1)[-1])
    return what.split(": ", 1)[0]


def one_schedule(
    settings: SimSettings, steps: int, membership: bool, search: SimulatedSearch | None, moments: bool = False
) -> tuple[dict[str, Any] | None, str]:
    """One schedule over the simulation (random steps, or the choices of
    `search`, which learns from it): the violation it found (its seed, what
    broke, and its `steps` or its operations `ops`), or None; and what the
    simulated nodes did, for the digest."""
    try:
        if search is None:
            plan = random_steps(
                random.Random(settings.seed),
                steps,
                membership=membership,
                power_losses=bool(settings.flush_interval_ms),
                moments=moments,
            )
            sim = run_schedule(settings, plan)
        else:
            cluster = SimCluster(Simulation(settings))
            searched(cluster, search, steps * INTERVAL_S / search.steps_per_interval)
            sim = cluster.sim
    except InvariantViolation as violation:
        made = (
            {"steps": plan, "shrunk": shrunk(settings, plan, str(violation))}
            if search is None
            else {"ops": [{"at_s": round(op.at_s, 3), "f": op.f, "args": op.args} for op in cluster.ops]}
        )
        return {"seed": settings.seed, "violation": str(violation), **made}, str(violation)
    return None, json.dumps(sim.events, sort_keys=True, default=str)
