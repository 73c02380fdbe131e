"""Seeded nemesis schedules: faults at intervals, each followed by its
recovery, and always a final heal of everything.

A schedule is plain data (`NemesisOp`s with their start time), made before
the run from the seed, so a run can be repeated and a schedule tested alone.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

FAULTS = {
    "partition": ("partition", "heal"),
    "pause": ("pause", "resume"),
    "kill": ("kill", "start"),
    "restart": ("restart", None),
    "bounce": ("bounce", None),
    "wipe": ("wipe", None),
    "latency": ("latency", "heal"),
}
TOPOLOGIES = ("isolate", "isolate-leader", "halves", "majorities-ring", "bridge", "one-way", "flip-flop")
TARGETS = ("one", "leader", "minority")


@dataclass(frozen=True)
class NemesisOp:
    at_s: float
    f: str
    args: dict = field(default_factory=dict)


def generate(
    rng: random.Random,
    kinds: list[str],
    time_limit_s: float,
    interval_s: float,
    nodes: int,
    topologies: list[str] | None = None,
) -> list[NemesisOp]:
    """Alternate quiet and faulty intervals of `interval_s` until the time
    limit; every fault is undone before the next one, and the schedule ends
    with `heal-all`. Partitions draw from `topologies` (default: all that fit
    the cluster size)."""
    unknown = sorted(set(kinds) - set(FAULTS))
    if unknown:
        raise ValueError(f"--nemesis: unknown fault(s) {unknown}; known: {sorted(FAULTS)}")
    allowed = [t for t in TOPOLOGIES if t != "flip-flop" or nodes == 5]
    if topologies:
        wrong = sorted(set(topologies) - set(allowed))
        if wrong:
            raise ValueError(f"--topologies: {wrong} not available for {nodes} nodes; available: {allowed}")
        allowed = list(topologies)
    ops: list[NemesisOp] = []
    at = interval_s
    while kinds and at + interval_s <= time_limit_s:
        kind = rng.choice(kinds)
        fault, recovery = FAULTS[kind]
        args: dict = {}
        if kind == "partition":
            args = {"topology": rng.choice(allowed), "seed": rng.randrange(2**31)}
        elif kind == "latency":
            args = {"latency_ms": rng.choice([50, 200]), "jitter_ms": 20}
        else:
            args = {"target": rng.choice(TARGETS), "seed": rng.randrange(2**31)}
        ops.append(NemesisOp(at, fault, args))
        if recovery is not None:
            ops.append(NemesisOp(at + interval_s, recovery, {"of": fault}))
        at += 2 * interval_s
    ops.append(NemesisOp(time_limit_s, "heal-all"))
    return ops
