"""A power loss (`lose-unfsynced`): the node killed, the writes it had not
fsynced dropped (harness/lazyfs.py's filesystem forgets them), and started
again. Several nodes lose power at one instant, as nodes sharing a feed do.
The guided nemesis cuts the leader's power while only a bare majority holds
its latest records: what they elect must still hold every committed one."""

from __future__ import annotations

import random
from typing import TYPE_CHECKING, Any

from history.operations import NemesisOp

from . import nodes
from .family import Choice, Family, seed

if TYPE_CHECKING:
    from nemesis.executor import Nemesis
    from nemesis.simulated import SimNemesis


def lose(nemesis: Nemesis, f: str, args: dict[str, Any]) -> list[str]:
    """Each node aimed at loses power (several at one instant: `at_once`)."""
    aimed = nemesis.aimed(args)
    if len(aimed) > 1:
        return at_once(nemesis, aimed)
    for node in aimed:
        nodes.cycle(nemesis, node, nemesis.cluster.lose)
    return aimed


def at_once(nemesis: Nemesis, aimed: list[str]) -> list[str]:
    """Several nodes' power lost at one instant: all killed first, then
    each one's unfsynced writes dropped, then all started, so none comes
    back while another still holds what it had not made durable."""
    for node in aimed:
        nemesis.cluster.kill(node)
    for node in aimed:
        nemesis.cluster.lose(node)
    for node in aimed:
        nemesis.cluster.start(node)
        nemesis.paused.discard(node)
        nemesis.down.discard(node)
    return aimed


def bare_majority(rng: random.Random, at: float, interval_s: float, voters: int) -> list[NemesisOp]:
    """The leader's power lost while only a bare majority holds its latest
    records: a minority of followers killed (the leader commits with the
    rest), then, a third of the interval on, the rest paused, the leader's
    unfsynced writes dropped and the killed followers started. The leader
    and the killed followers are a majority without the records the paused
    ones hold: what they elect must still have every committed one (which
    only holds if the leader had fsynced what it counted)."""
    quorum = voters // 2 + 1
    later = at + interval_s / 3

    def followers(when: float, f: str, count: int) -> NemesisOp:
        return NemesisOp(when, f, {"target": "follower", "count": count, "seed": seed(rng)})

    return [
        followers(at, "kill", voters - quorum),
        followers(later, "pause", quorum - 1),
        NemesisOp(later, "lose-unfsynced", {"target": "leader", "seed": seed(rng)}),
        NemesisOp(later, "start"),
    ]


def simulated_lose(
    nemesis: SimNemesis, f: str, args: dict[str, Any], states: dict[str, str], rng: random.Random
) -> list[str]:
    """On a simulation: each node aimed at crashed with what it had not synced lost, and started."""
    aimed = nemesis.aimed(args, states, rng)
    for node in aimed:
        nemesis.cluster.crash(node, lose_unsynced=True)
        nemesis.cluster.start(node)
    return aimed


def turn(choice: Choice, rng: random.Random, at: float, interval_s: float, voters: int) -> list[NemesisOp] | None:
    return bare_majority(rng, at, interval_s, voters) if choice.cell[1] == "leader" else None


FAMILY = Family(
    makes={"lose-unfsynced": lose},
    risk={("lose-unfsynced", "leader"): 3},
    # The killed followers are started a third of an interval in (the start
    # took a second longer on a loaded machine), and the paused ones must
    # stay paused until those and the leader have elected.
    hold={("lose-unfsynced", "leader"): 2},
    turn=turn,
    simulates={"lose-unfsynced": simulated_lose},
)
