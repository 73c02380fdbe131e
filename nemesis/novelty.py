"""The novelty search (`--nemesis-strategy novelty`): faults chosen for the
states of the cluster they lead to, not for a table of risks. Mallory (CCS
2023) is the model: it steers Jepsen's nemesis by Q-learning over what it
observes of the nodes, rewarded for states it has not seen.

Every step (a third of the fault interval) the search reads what the nodes
say as an abstract state (checkers/abstract_state.py: roles, epochs and
logs behind, uncommitted tails, nodes held down, faults in force) and
learns from the move its last action made: the reward is 1/sqrt(visits)
of the state reached, and 1 more for a move (state, action, state) never
made before. It then takes the action with the most value plus a bonus
for what it has tried least where it is (1/sqrt(tries), for the action
and for its kind; an action never tried there is worth the most any can
be), or, a tenth of the time, any action (both drawn through the seeded
generator, so a seed and the observations reproduce its decisions).
Actions are a fault aimed at a role (the guided nemesis's choices,
nemesis/guided.py), `heal` (undo everything in force), `release` (end
one kind of fault in force, the rest held) and `wait`; faults pile up to
MAX_DEPTH in force, so it can learn sequences three deep and when in an
election or a commit to make them. A kind may pile on itself: two partitions (a follower deaf to
the leader, then another cut from it, can leave two leaders of different
epochs at once), two followers paused.

Without `priors`, nothing of the planted bugs' recipes is in it: no risk
table, no power loss staged on a bare majority. With them, the guided
nemesis's risk of a choice adds to its score and its recipes are made as
the guided nemesis makes them.

What it learned (`Memory`) carries over a campaign: a file it reads at the
start of a run and writes at its end.
"""

from __future__ import annotations

import json
import math
import random
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from history.faults import BY_NAME, CATALOGUE, HEAL_ALL
from history.observation import Observation, abstract
from history.operations import NemesisOp

from .faults import family_of
from .faults.family import Choice
from .guided import Guide, risk_of
from .turns import SETTLE_S, Steps

MAX_DEPTH = 3
STEPS_PER_INTERVAL = 3
ALPHA = 0.5  # how far one reward moves a value
GAMMA = 0.5  # how much the best value of the state reached counts
EPSILON = 0.1  # the share of steps that take any action
# The value of an action never taken where it is: the most any action can be
# worth (a reward of at most 2, a state and a move never seen, carried on at
# GAMMA), so that every action is tried once where it is before any is made
# again (R-max's optimism). Less, and the first action tried in a fresh
# memory, rewarded as everything is at first, outvalues the rest and is made
# again each time its state comes back.
OPTIMISTIC = 2.0 / (1 - GAMMA)
PRIOR_WEIGHT = 0.05  # a risk point of the guided nemesis's tables, with priors
WAIT, HEAL = "wait", "heal"
# The operations that end one kind of fault and leave the rest in force (its
# catalogue `recovery`): the links healed, the paused resumed, the killed
# started, room given, clocks set right. A voter change's `rejoin` is a
# procedure, ended only by heal.
RELEASES = tuple(
    dict.fromkeys(
        f.recovery for f in CATALOGUE if f.recovery and f.recovery != HEAL_ALL and not (f.reshapes or f.bookkeeping)
    )
)
RELEASE = "release"


@dataclass
class Memory:
    """What the search learned: visits per state, tries and value per
    (state, action), and every move (state, action, state) it saw."""

    visits: Counter[str] = field(default_factory=Counter)
    tries: Counter[str] = field(default_factory=Counter)
    value: dict[str, float] = field(default_factory=dict)
    moves: set[str] = field(default_factory=set)

    def to_json(self) -> dict[str, Any]:
        return {
            "visits": dict(self.visits),
            "tries": dict(self.tries),
            "value": self.value,
            "moves": sorted(self.moves),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Memory:
        return cls(Counter(data["visits"]), Counter(data["tries"]), dict(data["value"]), set(data["moves"]))

    @classmethod
    def read(cls, path: Path | None) -> Memory:
        """A memory file's, or a fresh memory where there is none yet."""
        if path is None or not Path(path).exists():
            return cls()
        return cls.from_json(json.loads(Path(path).read_text()))

    def write(self, path: Path) -> None:
        Path(path).write_text(json.dumps(self.to_json()) + "\n")

    def add(self, before: Memory, after: Memory) -> None:
        """What a run that started from `before` learned beyond it (`after`
        is where it ended), added here: runs that learned side by side (a
        campaign on Spark) each add their own."""
        self.visits.update(after.visits - before.visits)
        self.tries.update(after.tries - before.tries)
        self.value.update({key: value for key, value in after.value.items() if before.value.get(key) != value})
        self.moves |= after.moves


def merged(memories: list[Memory]) -> Memory:
    """What several memories learned, as one: per state and per (state,
    action), the most any of them saw (`value` from the memory that tried
    it most), and every move. Most, not the sum: a campaign's runs each
    keep the memory as it stood when they ended, so one campaign's files
    are snapshots of one growing memory, and the last of them is the most
    of them all; memories of different campaigns are under-counted so,
    never counted twice."""
    out = Memory()
    for memory in memories:
        out.visits |= memory.visits
        for key, tries in memory.tries.items():
            if tries >= out.tries.get(key, 0) and key in memory.value:
                out.value[key] = memory.value[key]
        out.tries |= memory.tries
        out.moves |= memory.moves
    return out


def _key(*parts: str) -> str:
    return "\t".join(parts)


def _action(choice: Choice) -> str:
    """A fault's action: its kind and where it is aimed (the cell's first two parts)."""
    return f"{choice.cell[0]}/{choice.cell[1]}"


def _kind(action: str) -> str:
    """An action's kind: a fault's (a voter change's variant), release, heal, wait."""
    return action.split("/", 1)[0]


class Search:
    """The policy: observations in, the operations of the next action out."""

    def __init__(self, guide: Guide, memory: Memory | None = None, priors: bool = False) -> None:
        self.guide = guide
        self.rng: random.Random = guide.rng
        self.memory = memory or Memory()
        self.priors = priors
        self.made: list[Choice] = []  # faults in force, as chosen
        self.last: tuple[str, str] | None = None  # (state, action) the last step took
        self.path: list[str] = []  # the states this run saw, in order

    def in_force(self) -> list[str]:
        return [choice.f for choice in self.made]

    def state(self, seen: Observation) -> str:
        return abstract(seen.rows, self.in_force(), seen.gone)

    def learn(self, reached: str) -> None:
        """The last action's reward, for reaching `reached`."""
        memory = self.memory
        memory.visits[reached] += 1
        self.path.append(reached)
        if self.last is None:
            return
        state, action = self.last
        move = _key(state, action, reached)
        reward = 1 / math.sqrt(memory.visits[reached]) + (0.0 if move in memory.moves else 1.0)
        memory.moves.add(move)
        ahead = [v for k, v in memory.value.items() if k.startswith(reached + "\t")]
        best = max(ahead, default=OPTIMISTIC)
        key = _key(state, action)
        before = memory.value.get(key, OPTIMISTIC)
        memory.value[key] = before + ALPHA * (reward + GAMMA * best - before)

    def options(self, seen: Observation) -> dict[str, Choice | None]:
        """The actions open now: a fault (up to MAX_DEPTH in force), heal,
        wait. A kind in force may be made again: a second partition cuts
        other links, a second pause holds another follower (what one more of
        the same reaches is a state of its own, so the search learns whether
        it is worth making); a voter change, one at a time; a fault on every
        link not again while it holds (it would change nothing). One kind in
        force may be let go while the rest hold (`release/resume`: the paused
        nodes resumed, a killed one still down), as Jepsen's nemeses end each
        fault on its own."""
        found: dict[str, Choice | None] = {WAIT: None}
        if self.made:
            found[HEAL] = None
        ending = {BY_NAME[choice.f].recovery for choice in self.made}
        for recovery in RELEASES:
            if recovery in ending:
                found[f"{RELEASE}/{recovery}"] = None
        if len(self.made) < MAX_DEPTH:
            in_force = set(self.in_force())
            made = {_action(choice) for choice in self.made}
            for choice in self.guide.choices(replace(seen, in_force=tuple(in_force))):
                again = choice.f in family_of(choice.f).recipe and choice.f in in_force
                if not (again or (choice.cell[1] == "links" and _action(choice) in made)):
                    found.setdefault(_action(choice), choice)
        return found

    def score(self, state: str, action: str, choice: Choice | None, kind_tries: int = 0) -> float:
        """An action's value where it is, a bonus for what it has tried least
        there, and another for the kind tried least there (`kind_tries`: its
        kind's tries among the actions open), so a kind aimed few ways (a
        voter change) is tried as soon as one aimed many ways (a partition)."""
        key = _key(state, action)
        bonus = 1 / math.sqrt(1 + self.memory.tries[key]) + 1 / math.sqrt(1 + kind_tries)
        prior = PRIOR_WEIGHT * risk_of(choice) if self.priors and choice is not None else 0.0
        return self.memory.value.get(key, OPTIMISTIC) + bonus + prior

    def step(self, at_s: float, seen: Observation, interval_s: float) -> list[NemesisOp]:
        """Learn from what the last action led to, choose the next: its operations."""
        state = self.state(seen)
        self.learn(state)
        options = self.options(seen)
        names = sorted(options)
        self.rng.shuffle(names)
        kinds: Counter[str] = Counter()
        for name in names:
            kinds[_kind(name)] += self.memory.tries[_key(state, name)]
        if self.rng.random() < EPSILON:
            action = names[0]
        else:
            action = max(names, key=lambda name: self.score(state, name, options[name], kinds[_kind(name)]))
        self.memory.tries[_key(state, action)] += 1
        self.last = (state, action)
        return self.ops(at_s, action, options[action], interval_s)

    def ops(self, at_s: float, action: str, choice: Choice | None, interval_s: float) -> list[NemesisOp]:
        if action == WAIT:
            return []
        if action.startswith(RELEASE + "/"):
            recovery = action.split("/", 1)[1]
            self.made = [made for made in self.made if BY_NAME[made.f].recovery != recovery]
            return [NemesisOp(at_s, recovery)]
        if action == HEAL or choice is None:
            undone = self.guide.undo(at_s, self.made)
            self.made = []
            return undone
        if not BY_NAME[choice.f].instant:
            self.made.append(choice)
        if self.priors or choice.f in family_of(choice.f).recipe:  # a voter change is a procedure of several operations
            return self.guide.ops(at_s, choice, interval_s)
        return [self.guide.op(at_s, choice)]


def search_turns(search: Search, interval_s: float, limit_s: float) -> Steps:
    """The search's steps until `limit_s`, as nemesis/turns.py's: `(at_s, op)`
    out (None: only look), `(Observation, now_s)` back; `heal-all` at the end."""
    every = interval_s / STEPS_PER_INTERVAL
    at = min(SETTLE_S, interval_s)
    while at + every <= limit_s:
        seen, now = yield at, None
        for op in search.step(at, seen, interval_s):
            seen, now = yield op.at_s, op
        at = max(at + every, now)
    yield limit_s, NemesisOp(limit_s, HEAL_ALL)
