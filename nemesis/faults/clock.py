"""Clock faults as plain data (`--nemesis clock`): the offset a node's clock
is given at each moment of a fault, a pure function of the fault's
arguments and the time since it began, so a seed reproduces every change.
`move` writes the offsets to the node's libfaketime control file
(`harness/faketime.py`, through the cluster), rewriting those that change
with time from a thread; `clock-reset` (and `heal-all`) sets it back to 0.

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
import threading
import time
from typing import TYPE_CHECKING, Any

from history.errors import Defect

from .family import TARGETS, Aiming, Choice, Drawing, Family, seed

if TYPE_CHECKING:
    from nemesis.executor import Nemesis
    from nemesis.simulated import SimNemesis

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


def move(nemesis: Nemesis, f: str, args: dict[str, Any]) -> list[str]:
    """Give each aimed node's clock the fault's offset now; one that changes
    with time is rewritten every TICK_S until the clocks are reset."""
    nodes = nemesis.aimed(args)
    began = time.monotonic()
    with nemesis.clock_lock:
        for node in nodes:
            nemesis.cluster.set_clock(node, offset_ms(args, 0.0))
            nemesis.clocks[node] = (args, began)
        if changes(args) and (nemesis.clock_ticker is None or not nemesis.clock_ticker.is_alive()):
            nemesis.clock_ticker = threading.Thread(target=_tick, args=(nemesis,), name="clock-faults", daemon=True)
            nemesis.clock_ticker.start()
    return nodes


def _tick(nemesis: Nemesis) -> None:
    while True:
        time.sleep(TICK_S)
        with nemesis.clock_lock:
            moving = {node: fault for node, fault in nemesis.clocks.items() if changes(fault[0])}
            if not moving:
                return
            now = time.monotonic()
            for node, (args, began) in moving.items():
                nemesis.cluster.set_clock(node, offset_ms(args, now - began))


def reset(nemesis: Nemesis, f: str = "clock-reset", args: dict[str, Any] | None = None) -> list[str]:
    """Every clock back to true time; the ones that were moved."""
    with nemesis.clock_lock:
        moved = sorted(nemesis.clocks)
        for node in moved:
            nemesis.cluster.set_clock(node, 0)
        nemesis.clocks.clear()
    return moved


def simulated_jump(
    nemesis: SimNemesis, f: str, args: dict[str, Any], states: dict[str, str], rng: random.Random
) -> list[str]:
    """On a simulation, a clock set off true time by the fault's offset at its start (a simulation does not skew one)."""
    aimed = nemesis.aimed(args, states, rng)
    for node in aimed:
        nemesis.cluster.set_clock(node, offset_ms(args, 0.0))
    return aimed


def _simulated_reset(nemesis: SimNemesis) -> list[str]:
    for node in nemesis.cluster.ids:
        nemesis.cluster.set_clock(node, 0)
    return list(nemesis.cluster.ids)


def drawn(kind: str, drawing: Drawing) -> dict[str, Any]:
    rng = drawing.rng
    return {"target": rng.choice(TARGETS), "seed": seed(rng), **draw(rng)}


def choices(kind: str, aiming: Aiming) -> list[Choice]:
    rng = aiming.rng
    return [
        Choice((kind, role, aiming.context), kind, {"target": role, "seed": seed(rng), **draw(rng)})
        for role in aiming.roles
    ]


# Which way a clock fault made at once for its risk moves the clock, by the role it hits.
WAY = {"leader": "behind", "follower": "ahead"}


def sharpen(choice: Choice, rng: random.Random) -> Choice:
    """A clock fault made for its risk moves the clock the way WAY says."""
    aim = {k: choice.args[k] for k in ("target", "seed")}
    return Choice(choice.cell, choice.f, {**aim, **draw(rng, WAY[choice.cell[1]])})


FAMILY = Family(
    makes={"clock": move, "clock-reset": reset},
    draw=drawn,
    choices=choices,
    risk={("clock", "leader"): 2},
    # Made at once with the leader lost: a cut-off leader's clock set back or
    # slowed holds on to leadership past its followers' election (a muted
    # leader hears the first vote request and steps down at once); with the
    # leader muted, a follower's clock jumped ahead gives up on the leader
    # before the others do, with a log as long as theirs (none gets more
    # records), so it asks for pre-votes while they still follow it, which
    # they must refuse (a pre-vote that comes from a follower cut off alone,
    # its log behind, is refused on the log and shows nothing).
    at_once={("leader-cut-off", "clock", "leader"): 3, ("leader-mute", "clock", "follower"): 3},
    sharpen=sharpen,
    heals=(("clocks", reset),),
    simulates={"clock": simulated_jump, "clock-reset": lambda nemesis, *_: _simulated_reset(nemesis)},
    simulated_heals=(("clocks", _simulated_reset),),
)
