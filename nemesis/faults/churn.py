"""Elections under stress (`churn`): slow links, the leader killed, then a
random node bounced every few hundred milliseconds (CHURN_BOUNCE_S) until
the interval ends: restarts landing inside elections. A recipe of other
families' faults, healed by `heal-all`; the random schedule's alone."""

from __future__ import annotations

import random

from history.operations import NemesisOp

from .family import Family, seed

CHURN_BOUNCE_S = (0.05, 0.25)


def churn(rng: random.Random, at: float, interval_s: float) -> list[NemesisOp]:
    tag = {"during": "churn"}
    ops = [
        NemesisOp(at, "latency", {"latency_ms": 150, "jitter_ms": 20, **tag}),
        NemesisOp(at, "kill", {"target": "leader", **tag}),
    ]
    t = at + rng.uniform(*CHURN_BOUNCE_S)
    while t < at + interval_s:
        ops.append(NemesisOp(t, "bounce", {"target": "one", "seed": seed(rng), **tag}))
        t += rng.uniform(*CHURN_BOUNCE_S)
    return ops


FAMILY = Family(makes={}, recipe={"churn": churn})
