"""Seeded nemesis schedules: faults at intervals, each followed by its
recovery, and always a final heal of everything.

A schedule is plain data (history/operations.py's `NemesisOp`s with their start time), made before
the run from the seed, so a run can be repeated and a schedule tested alone.
"""

from __future__ import annotations

import random

from history.errors import SettingError
from history.faults import BY_NAME, HEAL_ALL, KINDS
from history.operations import NemesisOp

from .faults import family_of
from .faults.family import Drawing

# Each kind `--nemesis` names: the operation it makes, and what undoes it
# (None: instant). What each one is: the catalogue, history/faults.py; how
# it is drawn: its family, nemesis/faults/.
FAULTS = {kind: (BY_NAME[kind].operation, BY_NAME[kind].recovery) for kind in KINDS}
TOPOLOGIES = (
    "isolate",
    "isolate-leader",
    "halves",
    "majorities-ring",
    "bridge",
    "one-way",
    "flip-flop",
    "mute-leader",
    "orphan",
)


def generate(
    rng: random.Random,
    kinds: list[str],
    time_limit_s: float,
    interval_s: float,
    nodes: int,
    topologies: list[str] | None = None,
    timeout_ms: int = 1000,
    framed: tuple[str, ...] = (),
) -> list[NemesisOp]:
    """Alternate quiet and faulty intervals of `interval_s` until the time
    limit; every fault is undone before the next one, and the schedule ends
    with `heal-all`. Kinds are drawn without replacement until each has had
    its turn, so a schedule long enough for every kind holds every kind.
    Partitions draw from `topologies` (default: all that fit the cluster size);
    brief faults are sized by the target's election timeout, `timeout_ms`;
    message faults draw from the kinds of message the target's framing names, `framed`."""
    unknown = sorted(set(kinds) - set(FAULTS))
    if unknown:
        raise SettingError("nemesis", f"unknown faults {unknown}; known: {sorted(FAULTS)}")
    allowed = [t for t in TOPOLOGIES if t != "flip-flop" or nodes == 5]
    if topologies:
        wrong = sorted(set(topologies) - set(allowed))
        if wrong:
            raise SettingError("topologies", f"{wrong} not available for {nodes} nodes; available: {allowed}")
        allowed = list(topologies)
    drawing = Drawing(rng, allowed, timeout_ms, framed)
    ops: list[NemesisOp] = []
    at = interval_s
    turns: list[str] = []
    while kinds and at + interval_s <= time_limit_s:
        turns = turns or list(kinds)
        kind = rng.choice(turns)
        turns.remove(kind)
        fault, recovery = FAULTS[kind]
        family = family_of(kind)
        if kind in family.recipe:  # several operations (churn, a voter change), undone by a recovery of its own
            ops += family.recipe[kind](rng, at, interval_s)
        else:
            ops.append(NemesisOp(at, fault, family.draw(kind, drawing)))
        if recovery is not None:
            ops.append(NemesisOp(at + interval_s, recovery, {"of": kind if kind in family.recipe else fault}))
        at += 2 * interval_s
    ops.append(NemesisOp(time_limit_s, HEAL_ALL))
    return ops
