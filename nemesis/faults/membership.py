"""Voter changes among faults (`membership`), and what changes membership
back (`rejoin`): as the target takes them (`changes`): voters (the
reference quorum, changers/voters.py), learners and members (etcd,
changers/members.py) or a stream's replicas (NATS, changers/replicas.py).

The random schedule's recipe: a follower's disk lost and the leader killed
before it is added again (its vote must not count under the old identity),
or one or two followers removed at once (`shrink`); then all rejoin. The
guided nemesis makes each variant a choice of its own, first of all:
changes in flight are where membership goes wrong, and a run has few turns.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from history.operations import NemesisOp

from .changers.members import MemberChanger
from .changers.replicas import ReplicaChanger
from .changers.voters import VoterChanger
from .family import Aiming, Choice, Family, seed

if TYPE_CHECKING:
    from nemesis.executor import Nemesis

# What a turn that a voter change opens is called in the second faults' risk tables.
VOTER_CHANGE = "voter-change"
REJOIN = ("rejoin", {"of": "membership"})


def changes(nemesis: Nemesis) -> MemberChanger | VoterChanger | ReplicaChanger:
    """Membership as the target takes it: learners and members, voters, or a stream's replicas."""
    capabilities = nemesis.cluster.target.capabilities
    if capabilities.member_changes:
        return MemberChanger(nemesis)
    return ReplicaChanger(nemesis) if capabilities.replica_changes else VoterChanger(nemesis)


def membership(rng: random.Random, at: float, interval_s: float) -> list[NemesisOp]:
    return (membership_wipe if rng.random() < 0.5 else membership_shrink)(rng, at, interval_s)


def membership_wipe(rng: random.Random, at: float, interval_s: float) -> list[NemesisOp]:
    """A follower's disk lost, and the leader killed before it is added again."""
    tag = {"during": "membership"}
    return [
        NemesisOp(at, "wipe", {"target": "follower", "seed": seed(rng), **tag}),
        NemesisOp(at + interval_s / 3, "kill", {"target": "leader", **tag}),
        NemesisOp(at + 2 * interval_s / 3, "start", tag),
    ]


def membership_shrink(rng: random.Random, at: float, interval_s: float, count: int | None = None) -> list[NemesisOp]:
    """`count` followers (one or two, drawn, if not given) removed at once."""
    count = count or rng.choice([1, 2])
    return [NemesisOp(at, "shrink", {"count": count, "seed": seed(rng), "during": "membership"})]


def wipe_then_elect(rng: random.Random, at: float, interval_s: float) -> list[NemesisOp]:
    """A follower's disk lost and the leader killed, as the random schedule
    does, then the leader elected next killed too: with two voters down, no
    election succeeds without the wiped one, whose old identity must not vote.
    (A wiped node that has just heard from the first leader refuses the
    election that follows its death.)"""
    wipe, kill, start = membership_wipe(rng, at, interval_s)
    again = NemesisOp(at + 2 * interval_s / 3, "kill", kill.args)
    return [wipe, kill, again, NemesisOp(at + 5 * interval_s / 6, start.f, start.args)]


# The guided nemesis's variants: as the random schedule makes them, but two
# voters removed at once (the second change must wait for the first to
# commit) and two elections after a wipe: the cell each variant reaches first.
VARIANTS: dict[str, Callable[[random.Random, float, float], list[NemesisOp]]] = {
    "wipe": wipe_then_elect,
    "shrink": partial(membership_shrink, count=2),
}


def choices(kind: str, aiming: Aiming) -> list[Choice]:
    """Each variant, where a leader and a follower are there to change (never beside other faults in force)."""
    if aiming.node_faults_only or not {"leader", "follower"} <= set(aiming.roles):
        return []
    return [Choice((variant, "follower", aiming.context), kind, {"variant": variant}) for variant in VARIANTS]


def turn(choice: Choice, rng: random.Random, at: float, interval_s: float, voters: int) -> list[NemesisOp]:
    return VARIANTS[choice.args["variant"]](rng, at, interval_s)


def shrink(nemesis: Nemesis, f: str, args: dict[str, Any]) -> list[str]:
    return changes(nemesis).shrink(args.get("count", 1), random.Random(args.get("seed")), nemesis.named_nodes(args))


def rejoin(nemesis: Nemesis, f: str, args: dict[str, Any]) -> list[str]:
    return changes(nemesis).rejoin(nemesis.named_nodes(args))


def start_observers(nemesis: Nemesis, f: str, args: dict[str, Any]) -> list[str]:
    for node in nemesis.cluster.observers:
        nemesis.cluster.start(node)
    return list(nemesis.cluster.observers)


def _rejoin_all(nemesis: Nemesis) -> list[str]:
    """Removed members added back, a stream scaled back up; the nodes that were removed."""
    removed = sorted(nemesis.removed)
    if nemesis.removed or nemesis.scaled_down:
        changes(nemesis).rejoin()
    return removed


FAMILY = Family(
    makes={"shrink": shrink, "rejoin": rejoin, "start-observers": start_observers},
    recipe={"membership": membership},
    choices=choices,
    # A lost disk first: its question (may the old identity vote?) comes up
    # only in the elections the turn forces, seconds in, while a removal's
    # is settled within a second of its being made.
    risk={("wipe", "follower"): 6, ("shrink", "follower"): 5},
    # The leader killed or bounced at once, the change in flight.
    at_once={(VOTER_CHANGE, "kill", "leader"): 2, (VOTER_CHANGE, "bounce", "leader"): 2},
    turn=turn,
    opens=VOTER_CHANGE,
    undo=(REJOIN,),
    heals=(("members", _rejoin_all),),
)
