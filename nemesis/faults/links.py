"""Links cut or slowed (`partition`, `latency`) until `heal` makes every
link whole: a topology's cut (nemesis/topologies.py) aimed at the leader or
at a role, or the links a translated schedule names; a latency toxic on
every link. A partition also confines clients with the nodes it cuts off
(the executor's `confine`)."""

from __future__ import annotations

import random
from typing import TYPE_CHECKING, Any

from nemesis import topologies

from . import messages
from .family import Aiming, Choice, Drawing, Family, seed

if TYPE_CHECKING:
    from nemesis.executor import Nemesis
    from nemesis.simulated import SimNemesis

# Partitions by the cell they reach: the role that must be there, the
# topology, how it is aimed (at the leader, unless a role is named; a
# one-way cut from the leader to a follower, unless `to-leader`), the cell.
FOLLOWER = {"target": "follower"}
PARTITIONS: tuple[tuple[str, str, dict[str, str], str], ...] = (
    ("leader", "isolate-leader", {}, "leader-cut-off"),
    ("leader", "mute-leader", {}, "leader-mute"),
    ("follower", "one-way", FOLLOWER, "follower-deaf"),
    ("follower", "one-way", {**FOLLOWER, "way": "to-leader"}, "leader-deaf"),
    ("follower", "orphan", FOLLOWER, "follower-orphaned"),
    ("follower", "isolate", FOLLOWER, "followers-cut-off"),
)


def partition(nemesis: Nemesis, f: str, args: dict[str, Any]) -> list[Any]:
    """A topology's cut (aimed at the leader, or at a role), or the `links` named (a translated schedule's)."""
    rng = random.Random(args.get("seed"))
    if "links" in args:
        grudge = topologies.from_links({(nemesis.named(src), nemesis.named(dst)) for src, dst in args["links"]})
    elif args.get("only_a_leader") and nemesis.leader(paused_too=True) is None:
        grudge = {}
    elif args.get("target") in ("follower", "candidate"):  # the guided nemesis aims by role
        chosen = nemesis.targets(args["target"], rng)
        grudge = topologies.aimed(args, list(nemesis.cluster.ids), rng, nemesis.leader(), chosen[0]) if chosen else {}
    else:
        grudge = topologies.make(args["topology"], list(nemesis.cluster.ids), rng, nemesis.leader(paused_too=True))
    nemesis.faulty_links = True
    made = nemesis.links.cut(topologies.links(grudge))
    nemesis.cut |= set(made)
    nemesis.confine(rng, args.get("clients", 0))
    return [list(link) for link in made]


def latency(nemesis: Nemesis, f: str, args: dict[str, Any]) -> list[Any]:
    nemesis.faulty_links = True
    attributes = {"latency": args["latency_ms"], "jitter": args.get("jitter_ms", 0)}
    return [list(link) for link in nemesis.links.add_toxic(nemesis.links.links, "latency", attributes)]


def heal(nemesis: Nemesis, f: str, args: dict[str, Any]) -> list[Any]:
    """Every link whole again; the messages the losses in force dropped, named."""
    return _whole(nemesis)


def _whole(nemesis: Nemesis, counted: bool = False) -> list[Any]:
    """Links healed; `counted` (a heal-all's, perhaps from an exit path's
    thread): counted, so a brief fault that it overtook stops there."""
    with nemesis.links_lock:
        nemesis.heals += counted
        dropped = messages.healed(nemesis)
        nemesis.links.heal()
        nemesis.cut.clear()
    nemesis.faulty_links = False
    nemesis.confined.clear()
    return dropped


def simulated_partition(
    nemesis: SimNemesis, f: str, args: dict[str, Any], states: dict[str, str], rng: random.Random
) -> list[Any]:
    """A topology's cut on a simulation, aimed at the role named (else at the leader)."""
    cluster = nemesis.cluster
    aimed = nemesis.aim(args["target"], states, rng)[0] if args.get("target") else None
    cut = topologies.links(topologies.aimed(args, list(cluster.ids), rng, cluster.leader(), aimed))
    cluster.cut.update(cut)
    return [list(link) for link in cut]


def _simulated_heal(nemesis: SimNemesis) -> list[Any]:
    nemesis.cluster.heal()
    return []


def draw(kind: str, drawing: Drawing) -> dict[str, Any]:
    rng = drawing.rng
    if kind == "partition":
        return {"topology": rng.choice(drawing.topologies), "seed": seed(rng)}
    return {"latency_ms": rng.choice([50, 200]), "jitter_ms": 20}


def choices(kind: str, aiming: Aiming) -> list[Choice]:
    """Slow links, or a partition per way of cutting the leader or a
    follower off where the topologies allowed have it; none beside faults in force that cut links."""
    if aiming.node_faults_only:
        return []
    if kind == "latency":
        return [Choice(("latency", "links", aiming.context), "latency", {"latency_ms": 200, "jitter_ms": 20})]
    allowed = aiming.topologies
    return [
        Choice(
            ("partition", cell, aiming.context), "partition", {"topology": topology, **aim, "seed": seed(aiming.rng)}
        )
        for role, topology, aim, cell in PARTITIONS
        if aiming.seen.nodes_in(role) and (allowed is None or topology in allowed)
    ]


FAMILY = Family(
    makes={"partition": partition, "latency": latency, "heal": heal},
    draw=draw,
    choices=choices,
    # A leader cut off or muted holds the most risk (nemesis/guided.py says why); an orphaned follower some.
    risk={("partition", "leader-cut-off"): 3, ("partition", "leader-mute"): 4, ("partition", "follower-orphaned"): 1},
    # A leader cut off: a new leader is elected one to three seconds in, and
    # a stale read needs a write that leader commits, then a read the old one
    # answers (within one interval of three seconds, that came too late as often as not).
    hold={("partition", "leader-cut-off"): 2},
    heals=(("links", lambda nemesis: _whole(nemesis, counted=True)),),
    simulates={"partition": simulated_partition, "heal": lambda nemesis, *_: _simulated_heal(nemesis)},
    simulated_heals=(("links", _simulated_heal),),
)
