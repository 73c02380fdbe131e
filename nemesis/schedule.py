"""Seeded nemesis schedules: faults at intervals, each followed by its
recovery, and always a final heal of everything.

A schedule is plain data (`NemesisOp`s with their start time), made before
the run from the seed, so a run can be repeated and a schedule tested alone.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from history.errors import SettingError
from history.faults import AT_ONCE, BY_NAME, KINDS

from . import brief, clock, messages

# Each kind `--nemesis` names: the operation it makes, and what undoes it
# (None: instant). What each one is: the catalogue, history/faults.py.
FAULTS = {kind: (BY_NAME[kind].operation, BY_NAME[kind].recovery) for kind in KINDS}
CHURN_BOUNCE_S = (0.05, 0.25)
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
TARGETS = ("one", "leader", "minority")


@dataclass(frozen=True)
class NemesisOp:
    at_s: float
    f: str
    args: dict[str, Any] = field(default_factory=dict)


def churn(rng: random.Random, at: float, interval_s: float) -> list[NemesisOp]:
    """Slow links, then a leader kill, then a bounce of a random node every
    CHURN_BOUNCE_S: restarts landing inside elections."""
    tag = {"during": "churn"}
    ops = [
        NemesisOp(at, "latency", {"latency_ms": 150, "jitter_ms": 20, **tag}),
        NemesisOp(at, "kill", {"target": "leader", **tag}),
    ]
    t = at + rng.uniform(*CHURN_BOUNCE_S)
    while t < at + interval_s:
        ops.append(NemesisOp(t, "bounce", {"target": "one", "seed": rng.randrange(2**31), **tag}))
        t += rng.uniform(*CHURN_BOUNCE_S)
    return ops


def membership(rng: random.Random, at: float, interval_s: float) -> list[NemesisOp]:
    return (membership_wipe if rng.random() < 0.5 else membership_shrink)(rng, at, interval_s)


def membership_wipe(rng: random.Random, at: float, interval_s: float) -> list[NemesisOp]:
    """A follower's disk lost, and the leader killed before it is added again."""
    tag = {"during": "membership"}
    return [
        NemesisOp(at, "wipe", {"target": "follower", "seed": rng.randrange(2**31), **tag}),
        NemesisOp(at + interval_s / 3, "kill", {"target": "leader", **tag}),
        NemesisOp(at + 2 * interval_s / 3, "start", tag),
    ]


def membership_shrink(rng: random.Random, at: float, interval_s: float, count: int | None = None) -> list[NemesisOp]:
    """`count` followers (one or two, drawn, if not given) removed at once."""
    count = count or rng.choice([1, 2])
    return [NemesisOp(at, "shrink", {"count": count, "seed": rng.randrange(2**31), "during": "membership"})]


def _drawn_args(
    kind: str, rng: random.Random, topologies: list[str], timeout_ms: int, framed: tuple[str, ...]
) -> dict[str, Any]:
    """A fault's arguments, drawn: how it cuts links, what it aims at, how
    long a brief one lasts, which message (of the kinds `framed`) a message fault acts on."""
    if kind == "partition":
        return {"topology": rng.choice(topologies), "seed": rng.randrange(2**31)}
    if kind == "latency":
        return {"latency_ms": rng.choice([50, 200]), "jitter_ms": 20}
    if kind == "clock":
        return {"target": rng.choice(TARGETS), "seed": rng.randrange(2**31), **clock.draw(rng)}
    if kind in brief.KINDS:
        return {"target": rng.choice(TARGETS[:2]), "seed": rng.randrange(2**31), **brief.draw(kind, rng, timeout_ms)}
    if kind in (*messages.KINDS, messages.LOSS):
        return messages.draw(kind, rng, timeout_ms, framed)
    # A fault that may hit many nodes at once (a power loss) may also hit a majority, or all.
    aims = (*TARGETS, *AT_ONCE) if BY_NAME[kind].at_once else TARGETS
    return {"target": rng.choice(aims), "seed": rng.randrange(2**31)}


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
    ops: list[NemesisOp] = []
    at = interval_s
    turns: list[str] = []
    while kinds and at + interval_s <= time_limit_s:
        turns = turns or list(kinds)
        kind = rng.choice(turns)
        turns.remove(kind)
        fault, recovery = FAULTS[kind]
        if kind in ("churn", "membership"):
            ops += (churn if kind == "churn" else membership)(rng, at, interval_s)
            assert recovery is not None  # churn and membership are undone by a recovery of their own
            ops.append(NemesisOp(at + interval_s, recovery, {"of": kind}))
            at += 2 * interval_s
            continue
        args = _drawn_args(kind, rng, allowed, timeout_ms, framed)
        ops.append(NemesisOp(at, fault, args))
        if recovery is not None:
            ops.append(NemesisOp(at + interval_s, recovery, {"of": fault}))
        at += 2 * interval_s
    ops.append(NemesisOp(time_limit_s, "heal-all"))
    return ops
