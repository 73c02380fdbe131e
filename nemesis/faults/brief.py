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
import time
from typing import TYPE_CHECKING, Any

from history.faults import BY_NAME

from . import nodes
from .family import TARGETS, Aiming, Choice, Drawing, Family, seed

if TYPE_CHECKING:
    from nemesis.executor import Nemesis
    from nemesis.simulated import SimNemesis

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


def flicker(nemesis: Nemesis, f: str, args: dict[str, Any]) -> list[str]:
    """The aimed node's links cut both ways for `cut_ms`, `times` times,
    `gap_ms` apart; links a partition holds stay cut, and a heal-all (an
    exit path's, from another thread) that overtakes it stops it there."""
    aimed = nemesis.aimed(args)
    heals = nemesis.heals
    links = [link for link in nemesis.links.links if set(link) & set(aimed)]
    for time_ in range(args.get("times", 1)):
        if time_:
            time.sleep(args["gap_ms"] / 1000)
        with nemesis.links_lock:
            if nemesis.heals != heals:
                break
            made = nemesis.links.cut([link for link in links if link not in nemesis.cut])
        time.sleep(args["cut_ms"] / 1000)
        with nemesis.links_lock:
            if nemesis.heals == heals:
                nemesis.links.restore(made)
    return aimed


def stall(nemesis: Nemesis, f: str, args: dict[str, Any]) -> list[str]:
    """The aimed node paused for `for_ms` and resumed (unless a heal-all did first)."""
    aimed = [node for node in nemesis.aimed(args) if node not in nemesis.down]
    for node in aimed:
        nodes.pause(nemesis, node)
    time.sleep(args["for_ms"] / 1000)
    for node in aimed:
        if node in nemesis.paused:
            nodes.resume(nemesis, node)
    return aimed


def simulated(
    nemesis: SimNemesis, f: str, args: dict[str, Any], states: dict[str, str], rng: random.Random
) -> list[str]:
    """On a simulation, over before the next step: a stall pauses each aimed
    node for `for_ms` and resumes it; a flicker cuts its links for `cut_ms`,
    `times` times, `gap_ms` apart (links already cut stay so)."""
    cluster = nemesis.cluster
    aimed = nemesis.aimed(args, states, rng)
    for node in aimed:
        if f == "stall":
            cluster.pause(node)
            nemesis.run(args["for_ms"])
            cluster.resume(node)
            continue
        links = {(a, b) for a in cluster.ids for b in cluster.ids if a != b and node in (a, b)}
        for time_ in range(args.get("times", 1)):
            if time_:
                nemesis.run(args["gap_ms"])
            made = links - cluster.cut
            cluster.cut.update(made)
            nemesis.run(args["cut_ms"])
            cluster.cut.difference_update(made)
    return aimed


def drawn(kind: str, drawing: Drawing) -> dict[str, Any]:
    rng = drawing.rng
    return {"target": rng.choice(TARGETS[:2]), "seed": seed(rng), **draw(kind, rng, drawing.timeout_ms)}


def choices(kind: str, aiming: Aiming) -> list[Choice]:
    """Aimed at each role held; a flicker cuts links, so none beside faults in force that cut them."""
    if aiming.node_faults_only and BY_NAME[kind].hits != "node":
        return []
    rng = aiming.rng
    return [
        Choice(
            (kind, role, aiming.context),
            kind,
            {"target": role, "seed": seed(rng), **draw(kind, rng, aiming.timeout_ms)},
        )
        for role in aiming.roles
    ]


FAMILY = Family(
    makes={"flicker": flicker, "stall": stall},
    draw=drawn,
    choices=choices,
    simulates=dict.fromkeys(KINDS, simulated),
)
