"""Faults at the scale of single messages: `flicker` and `stall`
(history/faults.py), sized to the target's election timeout.

Real runs cut links and stop nodes for seconds at a time, where the
simulator drops and delays single messages at the moments votes and
fetches are in flight, and the simulator found bugs the real runs did not
(issue 39). A real cluster's messages cannot be picked out one at a time
from outside, but they can be caught in flight: a node's links cut for a
fraction of an election timeout lose what was on them then, and a silence
just short of the timeout, or just past it, is where a timer's edge
decides what happens next.

- `flicker`: one node's links cut both ways for `cut_ms`, drawn on a log
  scale from a tenth of the timeout (a heartbeat or two) to twice it,
  `times` times (1 to 3), `gap_ms` apart (a quarter of the timeout to one);
- `stall`: one node paused for `for_ms`, drawn on a log scale from half the
  timeout to three times it, and resumed: a leader that misses its
  deadlines and comes back while the others elect, or just after.

Each is over when its operation is (the executor makes it whole), so it is
instant in the catalogue, with its window from its invocation to its
confirmation. Pure and seeded: the draws come from the caller's generator.
"""

from __future__ import annotations

import math
import random

KINDS = ("flicker", "stall")


def log_uniform(rng: random.Random, low: float, high: float) -> int:
    return round(math.exp(rng.uniform(math.log(low), math.log(high))))


def draw(kind: str, rng: random.Random, timeout_ms: int) -> dict[str, int]:
    """The timing of a brief fault of `kind`, for a target whose election timeout is `timeout_ms`."""
    if kind == "flicker":
        return {
            "cut_ms": log_uniform(rng, timeout_ms / 10, 2 * timeout_ms),
            "times": rng.randint(1, 3),
            "gap_ms": log_uniform(rng, timeout_ms / 4, timeout_ms),
        }
    return {"for_ms": log_uniform(rng, timeout_ms / 2, 3 * timeout_ms)}
