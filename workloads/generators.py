"""What clients ask for: seeded operation generators for each workload. How
a node is asked, and how its answer becomes a history completion, is the
target's (`targets.interface.TargetClient.invoke`).

An operation is `(f, key, value)` with `value` as the history shows it
(DESIGN.md: append value; write value; cas [expected, new]; read null).
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass

WORKLOADS = ("append", "register")


@dataclass(frozen=True)
class Operation:
    f: str
    key: str | None
    value: object


class AppendWorkload:
    """Unique integer values, so every value is traceable to one append."""

    def __init__(self, rng: random.Random) -> None:
        self.values = itertools.count(1)

    def next_op(self) -> Operation:
        return Operation("append", None, next(self.values))


class RegisterWorkload:
    """Reads, writes and compare-and-sets over a few keys; written values are
    unique so a read names the write it saw."""

    def __init__(self, rng: random.Random, keys: int = 3) -> None:
        self.rng = rng
        self.keys = [f"k{i}" for i in range(keys)]
        self.values = itertools.count(1)

    def next_op(self) -> Operation:
        key = self.rng.choice(self.keys)
        roll = self.rng.random()
        if roll < 0.5:
            return Operation("read", key, None)
        if roll < 0.8:
            return Operation("write", key, next(self.values))
        return Operation("cas", key, [self.rng.randrange(1, max(2, next(self.values))), next(self.values)])


def make_workload(name: str, rng: random.Random):
    if name == "append":
        return AppendWorkload(rng)
    if name == "register":
        return RegisterWorkload(rng)
    raise ValueError(f"--workload: unknown workload {name!r}; known: {list(WORKLOADS)}")

