"""What clients ask for: seeded operation generators for each workload, and
how a node's answer becomes a history completion (`ok`, `fail` or `info`).

An operation is `(f, key, value)` with `value` as the history shows it
(DESIGN.md: append value; write value; cas [expected, new]; read null).
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass

WORKLOADS = ("append", "register")

# Errors after which the operation definitely did not happen.
DEFINITE_ERRORS = {"not-leader", "bad-request", "cas-mismatch"}


@dataclass(frozen=True)
class Operation:
    f: str
    key: str | None
    value: object

    def request(self) -> dict:
        """The node client-port request fields for this operation."""
        if self.f == "append":
            return {"value": self.value}
        if self.f == "write":
            return {"key": self.key, "value": self.value}
        if self.f == "cas":
            return {"key": self.key, "expected": self.value[0], "new": self.value[1]}
        return {"key": self.key}


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


def completion(op: Operation, answer: dict | None, error: str | None = None) -> dict:
    """The completion row fields for `op`, from the node's answer or from a
    client-side error (timeout, lost connection: always `info`)."""
    if answer is None:
        return {"type": "info", "error": error or "no answer"}
    fields = {"epoch": answer.get("epoch"), "leader": answer.get("leader"), "offset": answer.get("offset")}
    failure = answer.get("error")
    if failure is None:
        value = answer.get("value") if op.f == "read" else op.value
        return {"type": "ok", "value": value, **fields}
    kind = "fail" if failure in DEFINITE_ERRORS else "info"
    return {"type": kind, "error": failure, "value": op.value, **fields}
