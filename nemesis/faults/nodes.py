"""Processes stopped and started: `pause` until `resume`, `kill` until
`start`, and the instant `bounce` (killed and started at once) and
`restart` (stopped gracefully and started). The steps here are also what
other families' faults are made of (a stall's pause, a lost disk's or a
power loss's kill and start); each keeps the executor's `paused` and `down`
true, so `heal_all` brings back exactly what is held."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .family import Family

if TYPE_CHECKING:
    from nemesis.executor import Nemesis
    from nemesis.simulated import SimNemesis


def pause(nemesis: Nemesis, node: str) -> None:
    if node not in nemesis.down:
        nemesis.before_pause[node] = nemesis.cluster.status(node)
        nemesis.cluster.pause(node)
        nemesis.paused.add(node)


def resume(nemesis: Nemesis, node: str) -> None:
    nemesis.cluster.resume(node)
    nemesis.paused.discard(node)


def kill(nemesis: Nemesis, node: str) -> None:
    nemesis.cluster.kill(node)
    nemesis.paused.discard(node)
    nemesis.down.add(node)


def start(nemesis: Nemesis, node: str) -> None:
    nemesis.cluster.start(node)
    nemesis.down.discard(node)


def cycle(nemesis: Nemesis, node: str, between: Callable[[str], Any] | None = None, graceful: bool = False) -> None:
    """The node stopped (killed, or `graceful`: resumed and stopped), `between` done to it while it is down, and started."""
    if graceful:
        nemesis.cluster.resume(node)
        nemesis.cluster.stop(node)
    else:
        nemesis.cluster.kill(node)
    if between is not None:
        between(node)
    nemesis.cluster.start(node)
    nemesis.paused.discard(node)
    nemesis.down.discard(node)


STEPS: dict[str, Callable[[Nemesis, str], None]] = {
    "pause": pause,
    "kill": kill,
    "bounce": cycle,
    "restart": lambda nemesis, node: cycle(nemesis, node, graceful=True),
}


def stop(nemesis: Nemesis, f: str, args: dict[str, Any]) -> list[str]:
    """pause, kill, bounce or restart each node aimed at."""
    nodes = nemesis.aimed(args)
    for node in nodes:
        STEPS[f](nemesis, node)
    return nodes


def bring_back(nemesis: Nemesis, f: str, args: dict[str, Any]) -> list[str]:
    """resume every paused node, or start every downed one (those of them named, if `nodes` are)."""
    nodes = sorted(nemesis.paused if f == "resume" else nemesis.down)
    named = nemesis.named_nodes(args)
    if named is not None:
        nodes = [node for node in nodes if node in named]
    for node in nodes:
        (resume if f == "resume" else start)(nemesis, node)
    return nodes


# The same on a simulated cluster (nemesis/simulated.py): paused, crashed, or crashed and started at once.
SIMULATED: dict[str, Callable[[Any, str], None]] = {
    "pause": lambda cluster, node: cluster.pause(node),
    "kill": lambda cluster, node: cluster.crash(node),
    "bounce": lambda cluster, node: _bounced(cluster, node),
}


def _bounced(cluster: Any, node: str) -> None:
    cluster.crash(node)
    cluster.start(node)


def simulated_stop(
    nemesis: SimNemesis, f: str, args: dict[str, Any], states: dict[str, str], rng: random.Random
) -> list[str]:
    aimed = nemesis.aimed(args, states, rng)
    for node in aimed:
        SIMULATED[f](nemesis.cluster, node)
    return aimed


def _simulated_resume(nemesis: SimNemesis) -> list[str]:
    paused = sorted(nemesis.cluster.paused)
    for node in paused:
        nemesis.cluster.resume(node)
    return paused


def _simulated_start(nemesis: SimNemesis) -> list[str]:
    down = nemesis.cluster.down()
    for node in down:
        nemesis.cluster.start(node)
    return down


def _resume_all(nemesis: Nemesis) -> list[str]:
    paused = sorted(nemesis.paused)
    for node in paused:
        resume(nemesis, node)
    return paused


def _start_all(nemesis: Nemesis) -> list[str]:
    down = sorted(nemesis.down)
    for node in down:
        start(nemesis, node)
    return down


FAMILY = Family(
    makes={**dict.fromkeys(STEPS, stop), "resume": bring_back, "start": bring_back},
    # A leader stopped opens an election; a candidate stopped, or bounced, lands inside one.
    risk={
        ("kill", "leader"): 2,
        ("pause", "leader"): 2,
        ("bounce", "candidate"): 2,
        ("kill", "candidate"): 2,
        ("bounce", "leader"): 1,
        ("restart", "leader"): 1,
    },
    # Halfway through a turn that cut off, muted or stopped the leader: a
    # follower restarted after the election that forced; its vote in that
    # epoch must survive the restart, or it can vote again.
    halfway={
        (first, fault, "follower"): 2
        for first in ("leader-cut-off", "leader-mute", "leader")
        for fault in ("bounce", "restart")
    },
    heals=(("paused", _resume_all), ("down", _start_all)),
    simulates={
        **dict.fromkeys(SIMULATED, simulated_stop),
        "resume": lambda nemesis, *_: _simulated_resume(nemesis),
        "start": lambda nemesis, *_: _simulated_start(nemesis),
    },
    simulated_heals=(("paused", _simulated_resume), ("down", _simulated_start)),
)
