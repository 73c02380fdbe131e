"""What clients ask for: seeded operation generators for each workload. How
a node is asked, and how its answer becomes a history completion, is the
target's (`targets.interface.TargetClient.invoke`).

An operation is `(f, key, value)` with `value` as the history shows it
(docs/organisation.md: append value; write value; cas [expected, new]; read null).
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass

from history.errors import SettingError

WORKLOADS = ("append", "register", "lock")


@dataclass(frozen=True)
class Operation:
    f: str
    key: str | None
    value: object


class Workload:
    """One generator shared by all clients, so values are unique across them.
    A workload whose operations follow one another per client (a lock:
    acquire, then add, then release) gives each client a session of its own
    (`for_client`), told how each operation ended (`completed`)."""

    def for_client(self):
        return self

    def completed(self, op: Operation, row: dict) -> None:
        """`row`: the history row that completed `op`."""


class AppendWorkload(Workload):
    """Unique integer values, so every value is traceable to one append. With
    `keys` (a target whose appends go to lists, `Target.append_keys`), each
    append goes to one of that many lists, chosen at random; without, to the
    target's one log."""

    def __init__(self, rng: random.Random, keys: int = 0) -> None:
        self.rng = rng
        self.keys = [f"a{i}" for i in range(keys)]
        self.values = itertools.count(1)

    def next_op(self) -> Operation:
        return Operation("append", self.rng.choice(self.keys) if self.keys else None, next(self.values))


class RegisterWorkload(Workload):
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


LOCK, GUARDED = "lock", "guarded"
LOCK_TTL_MS = 3000


class LockWorkload(Workload):
    """Each client in turn: `acquire` the lock (on a lease of `LOCK_TTL_MS`,
    the invoke's value), `add` a unique value to the guarded list (a read,
    then a plain write of the longer list: safe only if the lock excludes
    everyone else), `release` it (the value is the lock's key, the acquire's
    result). The `mutual-exclusion` checker judges the holds and the list."""

    def __init__(self, rng: random.Random) -> None:
        self.values = itertools.count(1)

    def for_client(self) -> LockSession:
        return LockSession(self.values)


class LockSession(Workload):
    def __init__(self, values) -> None:
        self.values = values
        self.held: str | None = None  # the lock's key while this client holds it
        self.added = False

    def next_op(self) -> Operation:
        if self.held is None:
            return Operation("acquire", LOCK, {"ttl_ms": LOCK_TTL_MS})
        if not self.added:
            return Operation("add", GUARDED, next(self.values))
        return Operation("release", LOCK, self.held)

    def completed(self, op: Operation, row: dict) -> None:
        if op.f == "acquire":
            self.held, self.added = (row["value"], False) if row["type"] == "ok" else (None, False)
        elif op.f == "add":
            self.added = True
        else:  # released, or not: either way the lease ends it
            self.held = None


def make_workload(name: str, rng: random.Random, append_keys: int = 0):
    if name == "append":
        return AppendWorkload(rng, append_keys)
    if name == "register":
        return RegisterWorkload(rng)
    if name == "lock":
        return LockWorkload(rng)
    raise SettingError("workload", f"unknown workload {name!r}; known: {list(WORKLOADS)}")
