"""The feedback-guided nemesis (`--nemesis-strategy guided`): instead of a
schedule drawn before the run, each fault is chosen when its turn comes,
from what the nodes say about themselves then, to reach a coverage cell
(`checkers/coverage.py`: fault kind, role of what it hits, what else is
going on) tried least so far. Ties go to the cells that hold the most risk
(the leader muted, cut off or killed, a fault during an election), then to the
seeded generator, so a seed reproduces the decisions given the same
observations.

Each turn (nemesis/turns.py times them) is one interval of faults (two for
a leader cut off, or a leader's power lost: HOLD) followed by a quiet one:
a first fault (or a voter change, first of all where `membership` is among
the faults, made as the random schedule makes them),
then more faults where one would reach a cell never tried with those before
it in force (overlapping faults): one at once if its pair with
the first holds a known risk (RISK_AT_ONCE), one halfway through, the
riskiest untried first (RISK_HALFWAY); then lost disks and removed voters
added back and `heal-all`. Faults that damage files (corrupt, a full disk)
are aimed only while fewer than a minority of the voters are still damaged
(`repaired`): beyond that a quorum cannot mend what was lost.
Coverage carries over: a campaign hands each run what its earlier runs
tried, so later runs go where earlier ones did not.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

from checkers.abstract_state import NEAR_ENTRIES, stated_role
from checkers.coverage import context as context_of
from checkers.coverage import role_of
from history.faults import AT_ONCE, BY_NAME, CATALOGUE, of_kind
from history.messages import IN_ELECTION, UNAIMED

from . import brief, clock, messages
from .schedule import NemesisOp, membership_shrink, membership_wipe

# The kinds the guided nemesis aims (history/faults.py); a node fault is
# aimed at a role, where a clock fault also draws how the clock moves and a
# voter change is a recipe of its own.
GUIDED_FAULTS = tuple(fault.name for fault in CATALOGUE if fault.guided and not fault.bookkeeping)
NODE_FAULTS = tuple(kind for kind in of_kind("node", guided=True) if kind not in ("clock", "membership", *brief.KINDS))


def wipe_then_elect(rng: random.Random, at: float, interval_s: float) -> list[NemesisOp]:
    """A follower's disk lost and the leader killed, as the random schedule
    does, then the leader elected next killed too: with two voters down, no
    election succeeds without the wiped one, whose old identity must not vote.
    (A wiped node that has just heard from the first leader refuses the
    election that follows its death.)"""
    wipe, kill, start = membership_wipe(rng, at, interval_s)
    again = NemesisOp(at + 2 * interval_s / 3, "kill", kill.args)
    return [wipe, kill, again, NemesisOp(at + 5 * interval_s / 6, start.f, start.args)]


def power_loss_bare_majority(rng: random.Random, at: float, interval_s: float, voters: int) -> list[NemesisOp]:
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
        return NemesisOp(when, f, {"target": "follower", "count": count, "seed": rng.randrange(2**31)})

    return [
        followers(at, "kill", voters - quorum),
        followers(later, "pause", quorum - 1),
        NemesisOp(later, "lose-unfsynced", {"target": "leader", "seed": rng.randrange(2**31)}),
        NemesisOp(later, "start"),
    ]


# A voter change among faults, as the random schedule makes them, but two
# voters removed at once (the second change must wait for the first to
# commit) and two elections after a wipe: the cell each variant reaches first.
MEMBERSHIP: dict[str, Callable[[random.Random, float, float], list[NemesisOp]]] = {
    "wipe": wipe_then_elect,
    "shrink": partial(membership_shrink, count=2),
}
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
# Faults held for more than one interval, for the election their question
# needs. A leader cut off: a new leader is elected one to three seconds in,
# and a stale read needs a write that leader commits, then a read the old
# one answers (within one interval of three seconds, that came too late as
# often as not). A leader's power lost with a bare majority holding its
# records: the killed followers are started a third of an interval in (the
# start took a second longer on a loaded machine), and the paused ones must
# stay paused until those and the leader have elected.
HOLD = {("partition", "leader-cut-off"): 2, ("lose-unfsynced", "leader"): 2}
# The cells that hold the most risk, tried first among equals. The leader
# muted first of all (with a follower's clock jumped ahead at once,
# RISK_AT_ONCE): the one turn asks three questions (may the leader
# acknowledge what only it holds? may a follower still following it grant
# the pre-votes of one that gave up on it early, KIP-996? does a leader that
# still hears a majority step down?), and a run's first turn comes before
# any other.
RISK = {
    ("partition", "leader-cut-off"): 3,
    ("partition", "leader-mute"): 4,
    ("kill", "leader"): 2,
    ("pause", "leader"): 2,
    ("bounce", "candidate"): 2,
    ("kill", "candidate"): 2,
    ("bounce", "leader"): 1,
    ("restart", "leader"): 1,
    ("partition", "follower-orphaned"): 1,
    ("lose-unfsynced", "leader"): 3,
    ("clock", "leader"): 2,
}
# Which way a clock fault made at once for its risk moves the clock, by the role it hits.
CLOCK_WAY = {"leader": "behind", "follower": "ahead"}
# Voter changes, where `membership` is among the faults, come before any
# other fault: changes in flight are where membership goes wrong, and a run
# has few turns. A lost disk first: its question (may the old identity
# vote?) comes up only in the elections the turn forces, seconds in, while a
# removal's is settled within a second of its being made.
VOTER_CHANGE_RISK = {"wipe": 6, "shrink": 5}
# Second faults that hold the most risk with the first in force, (the
# first's role, fault, role): made at once (before the cluster reacts to the
# first), or halfway through (after it has). At once: a cut-off leader's
# clock set back or slowed holds on to leadership past its followers'
# election (a muted leader hears the first vote request and steps down at
# once); with the leader muted, a follower's clock jumped ahead gives up on
# the leader before the others do, with a log as long as theirs (none gets
# more records), so it asks for pre-votes while they still follow it, which
# they must refuse (a pre-vote that comes from a follower cut off alone, its
# log behind, is refused on the log and shows nothing). Halfway: a follower
# restarted after the election that cutting off, muting or stopping the
# leader forced; its vote in that epoch must survive the restart, or it can
# vote again. A voter change (the first named `voter-change`) with the leader
# killed or bounced at once, the change in flight.
RISK_AT_ONCE = {
    ("leader-cut-off", "clock", "leader"): 3,
    ("leader-mute", "clock", "follower"): 3,
    ("voter-change", "kill", "leader"): 2,
    ("voter-change", "bounce", "leader"): 2,
}
RISK_HALFWAY = {
    (first, fault, "follower"): 2
    for first in ("leader-cut-off", "leader-mute", "leader")
    for fault in ("bounce", "restart")
}
# A leader lost (cut off, muted, killed or paused) opens an election: a
# message fault made at once lands on what is in flight then, a vote asked
# for or given, or the new leader's notice (history/messages.py's moment,
# not any one bug's message).
RISK_AT_ONCE |= {
    (first, fault, kind): 1
    for first in ("leader-cut-off", "leader-mute", "leader")
    for fault in messages.KINDS
    for kind in IN_ELECTION
}
Cell = tuple[str, str, str]


def read_tried(path: Path | None) -> Counter[Any]:
    """Cells tried before, from a coverage file (a list of cells with counts, as verdicts hold them)."""
    if path is None or not Path(path).exists():
        return Counter()
    return Counter({(c["fault"], c["role"], c["with"]): c["count"] for c in json.loads(Path(path).read_text())})


@dataclass(frozen=True)
class Observation:
    """What the nodes say at a moment: each live node's state, and the kinds
    of faults in force; for the novelty search (nemesis/novelty.py), each
    live node's latest status as an events row, and the nodes held down
    (node -> the fault that holds it); the nodes whose files a fault damaged
    that are not seen repaired yet (`repaired`)."""

    states: dict[str, str]
    in_force: tuple[str, ...] = ()
    rows: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    gone: Mapping[str, str] = field(default_factory=dict)
    damaged: frozenset[str] = frozenset()

    def context(self) -> str:
        return context_of(self.in_force, self.states)

    def nodes_in(self, role: str) -> list[str]:
        return sorted(node for node, state in self.states.items() if role_of(state) == role)


def repaired(damaged: Mapping[str, int], rows: Mapping[str, Mapping[str, Any]]) -> set[str]:
    """Of the nodes whose files were damaged (node -> when, in the history's
    nanoseconds), those whose status since says they are whole again: leading,
    or following while a node leads, and (where the status has offsets) with a
    log level with the longest (within NEAR_ENTRIES). A node that may lack
    records it acknowledged catches up from a leader before it counts again."""
    known = {node: row for node, row in rows.items() if node not in damaged or row["time_ns"] > damaged[node]}
    if not any(stated_role(node, row) == "leader" for node, row in known.items()):
        return set()
    offsets = {node: row["offset"] for node, row in known.items() if row.get("offset") is not None}
    longest = max(offsets.values(), default=0)
    return {
        node
        for node in damaged
        if node in known
        and stated_role(node, known[node]) in ("leader", "follower")
        and longest - offsets.get(node, longest) <= NEAR_ENTRIES
    }


@dataclass(frozen=True)
class Choice:
    cell: Cell
    f: str
    args: dict[str, Any]


def risk_of(choice: Choice) -> int:
    return VOTER_CHANGE_RISK[choice.args["variant"]] if choice.f == "membership" else RISK.get(choice.cell[:2], 0)


class Guide:
    def __init__(
        self,
        rng: random.Random,
        kinds: list[str],
        topologies: list[str] | None = None,
        tried: Counter[Any] | None = None,
        voters: int = 3,
        timeout_ms: int = 1000,
        framed: tuple[str, ...] = (),
    ) -> None:
        self.rng = rng
        self.voters = voters
        # The target's election timeout: what brief faults are sized by (nemesis/brief.py).
        self.timeout_ms = timeout_ms
        self.kinds = [k for k in kinds if k in GUIDED_FAULTS]
        # The kinds of message the target's framing names, that message faults are aimed at.
        self.framed = tuple(kind for kind in framed if kind not in UNAIMED)
        self.topologies = topologies
        self.tried: Counter[Any] = Counter(tried or {})

    def choices(self, seen: Observation, node_faults_only: bool = False) -> list[Choice]:
        """Every fault that could be aimed now, with the cell it would reach.
        Faults are aimed by role (the executor finds who holds it when the
        fault is made), so a replay aims them the same way."""
        context = seen.context()
        roles = [role for role in ("leader", "follower", "candidate") if seen.nodes_in(role)]
        # A quorum survives damaged files on a minority of its voters: no more while that many are not repaired.
        kinds = [k for k in self.kinds if not BY_NAME[k].damages or len(seen.damaged) < (self.voters - 1) // 2]
        found = []
        for kind in kinds:
            if kind in NODE_FAULTS:
                # A fault that may hit many at once (a power loss) is also aimed at a majority, and at all.
                many = AT_ONCE if BY_NAME[kind].at_once and len(seen.states) > 1 else ()
                found += [
                    Choice((kind, role, context), kind, {"target": role, "seed": self.rng.randrange(2**31)})
                    for role in (*roles, *many)
                ]
            elif kind == "clock":
                found += [
                    Choice(
                        ("clock", role, context),
                        "clock",
                        {"target": role, "seed": self.rng.randrange(2**31), **clock.draw(self.rng)},
                    )
                    for role in roles
                ]
            elif kind in brief.KINDS and (BY_NAME[kind].hits == "node" or not node_faults_only):
                found += [
                    Choice(
                        (kind, role, context),
                        kind,
                        {
                            "target": role,
                            "seed": self.rng.randrange(2**31),
                            **brief.draw(kind, self.rng, self.timeout_ms),
                        },
                    )
                    for role in roles
                ]
            elif kind in messages.KINDS:  # (a message fault cuts no link: it goes with node faults too)
                found += [
                    Choice((kind, message, context), kind, messages.aimed(kind, message, self.rng, self.timeout_ms))
                    for message in self.framed
                ]
            elif node_faults_only:
                continue
            elif kind == "latency":
                found.append(Choice(("latency", "links", context), "latency", {"latency_ms": 200, "jitter_ms": 20}))
            elif kind == "partition":
                found += self._partitions(seen, context)
            elif kind == "membership" and "leader" in roles and "follower" in roles:
                found += [
                    Choice((variant, "follower", context), "membership", {"variant": variant}) for variant in MEMBERSHIP
                ]
        return found

    def ops(self, at_s: float, choice: Choice, interval_s: float) -> list[NemesisOp]:
        """The operations a choice makes: one fault, or several: a voter
        change's, or a leader's power loss with a bare majority holding its
        records. The fault the choice names (or the first) carries its cell."""
        if choice.f == "membership":
            made = MEMBERSHIP[choice.args["variant"]](self.rng, at_s, interval_s)
        elif choice.cell[:2] == ("lose-unfsynced", "leader"):
            made = power_loss_bare_majority(self.rng, at_s, interval_s, self.voters)
        else:
            return [self.op(at_s, choice)]
        aimed = next((i for i, op in enumerate(made) if op.f == choice.f), 0)
        made[aimed] = NemesisOp(made[aimed].at_s, made[aimed].f, {**made[aimed].args, "aim": "/".join(choice.cell)})
        return made

    @staticmethod
    def held_s(choice: Choice, interval_s: float) -> float:
        """How long a turn's faults stay in force, by its first choice."""
        return HOLD.get(choice.cell[:2], 1) * interval_s

    @staticmethod
    def undo(at_s: float, made: list[Choice]) -> list[NemesisOp]:
        """What ends a turn: lost disks and removed voters added back, then everything healed."""
        rejoin = (
            [NemesisOp(at_s, "rejoin", {"of": "membership"})]
            if any(c.f in ("wipe", "membership") for c in made)
            else []
        )
        return rejoin + [NemesisOp(at_s, "heal-all")]

    def _partitions(self, seen: Observation, context: str) -> list[Choice]:
        """A partition per way of cutting the leader or a follower off, where
        the topologies allowed (the links that can be cut) have it."""
        allowed = self.topologies
        found = []
        for role, topology, aim, cell in PARTITIONS:
            if seen.nodes_in(role) and (allowed is None or topology in allowed):
                found.append(
                    Choice(
                        ("partition", cell, context),
                        "partition",
                        {"topology": topology, **aim, "seed": self.rng.randrange(2**31)},
                    )
                )
        return found

    def choose(self, seen: Observation) -> Choice | None:
        """The least tried cell reachable now (risk, then the seed, break ties); None if none is."""
        options = self.choices(seen)
        if not options:
            return None
        self.rng.shuffle(options)
        best = min(options, key=lambda c: (self.tried[c.cell], -risk_of(c)))
        self.tried[best.cell] += 1
        return best

    def overlap(self, seen: Observation, made: list[Choice], at_once: bool = False) -> Choice | None:
        """A node fault of another kind than those `made` this turn, only
        where it reaches a cell never tried; the riskiest with the first
        first (RISK_HALFWAY; `at_once`: only those of RISK_AT_ONCE, made
        whenever their first fault is, tried or not). A clock fault made
        for its risk moves the clock the way CLOCK_WAY says."""
        in_force = seen.in_force + tuple(c.cell[0] for c in made)
        risks = RISK_AT_ONCE if at_once else RISK_HALFWAY
        first = "voter-change" if made[0].f == "membership" else made[0].cell[1]
        options = [
            c
            for c in self.choices(replace(seen, in_force=in_force), node_faults_only=True)
            if (self.tried[c.cell] == 0 or (at_once and (first, *c.cell[:2]) in risks))
            and c.f not in {m.f for m in made}
        ]
        weighed = [(c, risks.get((first, *c.cell[:2]), 0)) for c in options]
        weighed = [(c, risk) for c, risk in weighed if risk or not at_once]
        if not weighed:
            return None
        self.rng.shuffle(weighed)
        choice, risk = max(weighed, key=lambda pair: pair[1])
        if choice.f == "clock" and risk:
            aim = {k: choice.args[k] for k in ("target", "seed")}
            choice = Choice(choice.cell, "clock", {**aim, **clock.draw(self.rng, CLOCK_WAY[choice.cell[1]])})
        self.tried[choice.cell] += 1
        return choice

    def op(self, at_s: float, choice: Choice) -> NemesisOp:
        return NemesisOp(at_s, choice.f, {**choice.args, "aim": "/".join(choice.cell)})
