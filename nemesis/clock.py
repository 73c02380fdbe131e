"""Clock faults as plain data (`--nemesis clock`): the offset a node's clock
is given at each moment of a fault, a pure function of the fault's
arguments and the time since it began, so a seed reproduces every change.
The executor writes the offsets to the node's libfaketime control file
(`harness/faketime.py`); `clock-reset` (and `heal-all`) sets it back to 0.

- `jump`: the clock is moved by `delta_ms` at once, and stays there.
- `skew`: the clock runs at `rate` times real time: its offset grows by
  (rate - 1) ms every real ms, as a drifting oscillator's does.
- `strobe`: the clock flips between `delta_ms` and its true time every
  `period_ms`, as Jepsen's strobe does.

A clock that runs slow or jumps back is what breaks a lease: the leader
measures its lease on its own clock.
"""

from __future__ import annotations

import random
from typing import Any

from history.errors import Defect

SHAPES = ("jump", "skew", "strobe")
# How often an offset that changes with time (skew, strobe) is written, in seconds.
TICK_S = 0.05


def draw(rng: random.Random, way: str | None = None) -> dict[str, Any]:
    """A clock fault's shape and size, from the schedule's seed. `way`:
    `behind`, only a clock set back 5 s, or running at a tenth of its speed
    (what stretches a lease, or a leader's wait for its followers, seconds
    past an election's few hundred milliseconds: long enough for clients to
    meet it; with a second back, Docker runs missed the stale reads it
    allows, and at a quarter speed the leader's 600 ms wait ended a second
    after the new leader's election); `ahead`, only a clock jumped 2 s or 5
    s on (past any fetch timeout at once: the node gives up on its leader
    before the others do)."""
    if way == "behind":
        return rng.choice([{"shape": "jump", "delta_ms": -5000}, {"shape": "skew", "rate": 0.1}])
    if way == "ahead":
        return {"shape": "jump", "delta_ms": rng.choice([2000, 5000])}
    shape = rng.choice(SHAPES)
    if shape == "skew":
        return {"shape": shape, "rate": rng.choice([0.25, 0.5, 2.0, 4.0])}
    delta = rng.choice([-1, 1]) * rng.choice([250, 1000, 5000])
    if shape == "strobe":
        return {"shape": shape, "delta_ms": delta, "period_ms": rng.choice([10, 50, 200])}
    return {"shape": shape, "delta_ms": delta}


def offset_ms(args: dict[str, Any], elapsed_s: float) -> int:
    """The clock's offset from true time, `elapsed_s` after the fault began."""
    shape = args["shape"]
    if shape == "jump":
        return int(args["delta_ms"])
    if shape == "skew":
        return round((float(args["rate"]) - 1.0) * elapsed_s * 1000)
    if shape == "strobe":
        flips = int(elapsed_s * 1000 // int(args["period_ms"]))
        return int(args["delta_ms"]) if flips % 2 == 0 else 0
    raise Defect(f"clock: unknown shape {shape!r}; known: {', '.join(SHAPES)}")


def changes(args: dict[str, Any]) -> bool:
    """Whether the offset moves after the fault began (it must be rewritten)."""
    return bool(args["shape"] != "jump")
