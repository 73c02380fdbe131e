"""A link's bandwidth cut (`bandwidth`): every link's traffic let through
at `rate_kb` kilobytes a second (the link proxies' bandwidth toxic) until
`heal`. Latency delays each message alike; a thin link delays a message by
what is queued before it, so a leader's heartbeats wait behind its large
appends, and a follower may give up on a leader that is still sending."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .family import Aiming, Choice, Drawing, Family

if TYPE_CHECKING:
    from nemesis.executor import Nemesis

# Kilobytes a second: a few appends' worth, to a trickle below one heartbeat's rate with its entries.
RATES_KB = (1, 8, 64)


def thin(nemesis: Nemesis, f: str, args: dict[str, Any]) -> list[list[str]]:
    nemesis.faulty_links = True  # (what a run's end heals)
    return [list(link) for link in nemesis.links.add_toxic(nemesis.links.links, "bandwidth", {"rate": args["rate_kb"]})]


def draw(kind: str, drawing: Drawing) -> dict[str, Any]:
    return {"rate_kb": drawing.rng.choice(RATES_KB)}


def choices(kind: str, aiming: Aiming) -> list[Choice]:
    """Every link thinned to the middle rate (it slows links: not beside faults in force that cut them)."""
    return [] if aiming.node_faults_only else [Choice((kind, "links", aiming.context), kind, {"rate_kb": RATES_KB[1]})]


FAMILY = Family(makes={"bandwidth": thin}, draw=draw, choices=choices)
