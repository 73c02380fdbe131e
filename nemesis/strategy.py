"""A strategy decides a run's faults (`--nemesis-strategy`): what the nodes
say goes in, the next operation comes out. Random, guided and novelty are
each a `Strategy`, so a run (harness/run.py) and the simulator drive any of
them with one loop, and a new strategy is one class here.

`steps` is a generator: it yields `(at_s, op)`, seconds from the start of
load (op None: only look), and is sent back `(Observation, now_s)` once the
shell has waited until then and made `op`. Pure and seeded: the seed and
the observations reproduce every decision.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Protocol

from history.operations import NemesisOp

from . import LEARNING
from .guided import Guide
from .novelty import Memory, Search, search_turns
from .schedule import generate
from .turns import Steps, turns


class Strategy(Protocol):
    """`decides`: whether it decides as the run goes (each operation written
    down as it is made) or fixed its `planned` schedule before the run;
    `memory`: what it learned, for later runs to start from (None: it learns nothing)."""

    @property
    def decides(self) -> bool: ...

    @property
    def planned(self) -> list[NemesisOp]: ...

    @property
    def memory(self) -> Memory | None: ...

    def steps(self, interval_s: float, limit_s: float) -> Steps: ...


@dataclass
class Fixed:
    """A schedule fixed before the run: drawn from the seed (the random
    strategy, nemesis/schedule.py), or another run's, replayed."""

    planned: list[NemesisOp]
    decides: bool = False
    memory: Memory | None = None

    def steps(self, interval_s: float, limit_s: float) -> Steps:
        for op in self.planned:
            if op.at_s >= 0:  # (one before it was made as the nodes started: `before_start`)
                yield op.at_s, op

    def before_start(self) -> list[NemesisOp]:
        """The operations made before the nodes start (a negative `at_s`):
        links slowed or thinned as a simulated cluster's are from its first
        moment, so that its first election runs under them too."""
        return [op for op in self.planned if op.at_s < 0]


@dataclass
class Guided:
    """The guided nemesis: each turn's faults aimed at the cell tried least (nemesis/guided.py, timed by turns.py)."""

    guide: Guide
    planned: list[NemesisOp] = field(default_factory=list)
    decides: bool = True
    memory: Memory | None = None

    def steps(self, interval_s: float, limit_s: float) -> Steps:
        return turns(self.guide, interval_s, limit_s)


@dataclass
class Novelty:
    """The novelty search over abstract states, learning into its memory (nemesis/novelty.py)."""

    search: Search
    planned: list[NemesisOp] = field(default_factory=list)
    decides: bool = True

    @property
    def memory(self) -> Memory | None:
        return self.search.memory

    def steps(self, interval_s: float, limit_s: float) -> Steps:
        return search_turns(self.search, interval_s, limit_s)


@dataclass(frozen=True)
class Setting:
    """What a strategy is made for: its name and seed, the `--nemesis` kinds,
    the run's time and interval, the cluster (nodes, voters), the topologies
    allowed, the target's election timeout and framed kinds of message, the
    coverage cells tried before, and (novelty) the memory it starts from."""

    name: str
    seed: int
    kinds: list[str]
    limit_s: float
    interval_s: float
    nodes: int
    voters: int
    topologies: list[str] | None = None
    timeout_ms: int = 1000
    framed: tuple[str, ...] = ()
    tried: Counter[Any] = field(default_factory=Counter)
    memory: Memory | None = None


def made(setting: Setting) -> Strategy:
    """The strategy `setting.name` names (nemesis/__init__.py's STRATEGIES)."""
    if setting.name == "random":
        ops = generate(
            random.Random(setting.seed),
            setting.kinds,
            setting.limit_s,
            setting.interval_s,
            setting.nodes,
            setting.topologies,
            setting.timeout_ms,
            setting.framed,
        )
        return Fixed(ops)
    guide = Guide(
        random.Random(setting.seed),
        setting.kinds,
        setting.topologies,
        setting.tried,
        setting.voters,
        setting.timeout_ms,
        setting.framed,
    )
    if setting.name not in LEARNING:
        return Guided(guide)
    return Novelty(Search(guide, setting.memory, priors=setting.name == "novelty-priors"))
