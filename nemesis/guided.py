"""The feedback-guided nemesis (`--nemesis-strategy guided`): instead of a
schedule drawn before the run, each fault is chosen when its turn comes,
from what the nodes say about themselves then, to reach a coverage cell
(`checkers/coverage.py`: fault kind, role of what it hits, what else is
going on) tried least so far. Ties go to the cells that hold the most risk
(the leader muted, cut off or killed, a fault during an election), then to the
seeded generator, so a seed reproduces the decisions given the same
observations.

Each turn (nemesis/turns.py times them) is one interval of faults (two for
a leader cut off, or a leader's power lost: the families' `hold`) followed by a quiet one:
a first fault (or a voter change, first of all where `membership` is among
the faults, made as the random schedule makes them),
then more faults where one would reach a cell never tried with those before
it in force (overlapping faults): one at once if its pair with
the first holds a known risk (the families' `at_once`), one halfway through, the
riskiest untried first (their `halfway`); then lost disks and removed voters
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
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from history.faults import BY_NAME, CATALOGUE, HEAL_ALL
from history.messages import UNAIMED
from history.observation import NEAR_ENTRIES, Observation, stated_role
from history.operations import NemesisOp

from .faults import AT_ONCE_RISK, HALFWAY_RISK, family_of
from .faults.family import ROLES, Aiming, Choice

# The kinds the guided nemesis aims (history/faults.py); how it aims each,
# and the risk each choice holds: its family's (nemesis/faults/).
GUIDED_FAULTS = tuple(fault.name for fault in CATALOGUE if fault.guided and not fault.bookkeeping)


def read_tried(path: Path | None) -> Counter[Any]:
    """Cells tried before, from a coverage file (a list of cells with counts, as verdicts hold them)."""
    if path is None or not Path(path).exists():
        return Counter()
    return Counter({(c["fault"], c["role"], c["with"]): c["count"] for c in json.loads(Path(path).read_text())})


def repaired(damaged: Mapping[str, int], rows: Mapping[str, Mapping[str, Any]]) -> set[str]:
    """Of the nodes whose files were damaged (node -> when, in the history's
    nanoseconds), those whose status since says they are whole again: leading,
    or following while a node leads, and (where the status has offsets) with a
    log level with the longest (within NEAR_ENTRIES), and (where it has a high
    watermark) one level with it too: a follower cut back whose log is near
    the others' but that no leader has yet answered knows no high watermark
    (a novelty run's corrupt faults damaged a second node of three so, and
    the two, each waiting to catch up, never voted again). A node that may
    lack records it acknowledged catches up from a leader before it counts again."""
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
        and longest - _or(known[node].get("hwm"), longest) <= NEAR_ENTRIES
    }


def _or(figure: int | None, otherwise: int) -> int:
    """A status's figure, where it has one."""
    return otherwise if figure is None else int(figure)


def risk_of(choice: Choice) -> int:
    """How much risk a choice holds (its family's table, by its fault and role): ties go to the riskiest."""
    return family_of(choice.f).risk.get(choice.cell[:2], 0)


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
        # The target's election timeout: what brief faults are sized by (nemesis/faults/brief.py).
        self.timeout_ms = timeout_ms
        self.kinds = [k for k in kinds if k in GUIDED_FAULTS]
        # The kinds of message the target's framing names, that message faults are aimed at.
        self.framed = tuple(kind for kind in framed if kind not in UNAIMED)
        self.topologies = topologies
        self.tried: Counter[Any] = Counter(tried or {})

    def choices(self, seen: Observation, node_faults_only: bool = False, leader_lost: bool = False) -> list[Choice]:
        """Every fault that could be aimed now, with the cell it would reach,
        as each kind's family aims it. Faults are aimed by role (the executor
        finds who holds it when the fault is made), so a replay aims them the
        same way. An election is open where the nodes show a candidate or no
        leader, or opening where a first fault has just lost the leader
        (`leader_lost`: `overlap` at once passes it for every first fault,
        and the at-once tables keep a message fault only after a leader's loss)."""
        roles = [role for role in ROLES if seen.nodes_in(role)]
        electing = leader_lost or "candidate" in roles or "leader" not in roles
        aiming = Aiming(
            self.rng,
            seen,
            seen.context(),
            roles,
            self.timeout_ms,
            self.framed,
            self.topologies,
            node_faults_only,
            electing,
        )
        # A quorum survives damaged files on a minority of its voters: no more while that many are not repaired.
        kinds = [k for k in self.kinds if not BY_NAME[k].damages or len(seen.damaged) < (self.voters - 1) // 2]
        return [choice for kind in kinds for choice in family_of(kind).choices(kind, aiming)]

    def ops(self, at_s: float, choice: Choice, interval_s: float) -> list[NemesisOp]:
        """The operations a choice makes: one fault, or several (its family's
        turn: a voter change's, or a leader's power loss with a bare majority
        holding its records). The fault the choice names (or the first) carries its cell."""
        turn = family_of(choice.f).turn
        made = turn(choice, self.rng, at_s, interval_s, self.voters) if turn else None
        if made is None:
            return [self.op(at_s, choice)]
        aimed = next((i for i, op in enumerate(made) if op.f == choice.f), 0)
        made[aimed] = NemesisOp(made[aimed].at_s, made[aimed].f, {**made[aimed].args, "aim": "/".join(choice.cell)})
        return made

    @staticmethod
    def held_s(choice: Choice, interval_s: float) -> float:
        """How long a turn's faults stay in force, by its first choice."""
        return family_of(choice.f).hold.get(choice.cell[:2], 1) * interval_s

    @staticmethod
    def undo(at_s: float, made: list[Choice]) -> list[NemesisOp]:
        """What ends a turn: what the families of its faults undo first (lost disks and removed voters added back), then everything healed."""
        undone = {f: args for choice in made for f, args in family_of(choice.f).undo}
        return [*(NemesisOp(at_s, f, args) for f, args in undone.items()), NemesisOp(at_s, HEAL_ALL)]

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
        first (the families' `halfway`; `at_once`: only those of their
        `at_once`, made whenever their first fault is, tried or not). A
        choice made for its risk is reshaped by its family's `sharpen`."""
        in_force = seen.in_force + tuple(c.cell[0] for c in made)
        risks = AT_ONCE_RISK if at_once else HALFWAY_RISK
        first = family_of(made[0].f).opens or made[0].cell[1]
        options = [
            c
            for c in self.choices(replace(seen, in_force=in_force), node_faults_only=True, leader_lost=at_once)
            if (self.tried[c.cell] == 0 or (at_once and (first, *c.cell[:2]) in risks))
            and c.f not in {m.f for m in made}
        ]
        weighed = [(c, risks.get((first, *c.cell[:2]), 0)) for c in options]
        weighed = [(c, risk) for c, risk in weighed if risk or not at_once]
        if not weighed:
            return None
        self.rng.shuffle(weighed)
        choice, risk = max(weighed, key=lambda pair: pair[1])
        sharpen = family_of(choice.f).sharpen
        if sharpen and risk:
            choice = sharpen(choice, self.rng)
        self.tried[choice.cell] += 1
        return choice

    def op(self, at_s: float, choice: Choice) -> NemesisOp:
        return NemesisOp(at_s, choice.f, {**choice.args, "aim": "/".join(choice.cell)})
