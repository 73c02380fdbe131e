"""What the `linearizable` checker checks against: a model is a small pure
object, a sequential specification (initial state, `step`), so the search
stays the same whatever the object is. Jepsen's Knossos and Porcupine put
the model outside the search the same way.

`step(state, op)` says whether `op` could take effect on `state` and the
state it leaves. An op carries what the history recorded (see `Op`); its
`outcome` is `ok`, `mismatch` (a compare that ran and saw another value, an
observation) or `unknown` (indeterminate: it may have taken effect, or not).
States must be hashable (the search memoises on them), or the model gives
`hash`, an injective key for its states.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from history.errors import SettingError


@dataclass(slots=True)
class Op:
    """One operation: its invocation and completion rows together."""

    index: int  # history row of the invocation
    process: int
    f: str
    key: str | None
    value: Any  # the invocation's value
    result: Any  # the completion's value (a read: the value read)
    offset: int | None  # the completion's log offset (appends)
    outcome: str  # ok | mismatch | unknown
    call: tuple[int, int]  # (time, row): where it starts in the total order of rows
    ret: tuple[int, int]  # where it ends; indeterminate ones end after everything


@dataclass(frozen=True)
class Ordered:
    """A partition its model decided without a search: valid, or the
    operation no order can place (`stuck`, a position in the partition's
    ops) and those the model's order puts before it (`prefix`)."""

    valid: bool
    stuck: int | None = None
    prefix: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class Model:
    name: str
    init: Any
    step: Callable[[Any, Op], tuple[bool, Any]]
    # The client functions this model knows; anything else in a history is an error.
    fs: frozenset[str]
    # Functions whose indeterminate operations constrain nothing (a read that
    # never answered): they are left out of the search.
    inert_unknown: frozenset[str] = frozenset()
    # Operations with different keys are independent and checked apart.
    partition: Callable[[Op], Hashable] | None = None
    hash: Callable[[Any], Hashable] | None = None
    params: dict[str, Any] = field(default_factory=dict)
    # Where the history fixes the only possible order (a log's offsets), the
    # partition (its key and ops) decided without a search; None: search it.
    order: Callable[[Hashable, list[Op]], Ordered | None] | None = None
    # A model the compiled search steps itself, without calling `step` (see `checkers/wgl.py`).
    native: str | None = None
    # The partition of unkeyed appends (one log), decided from the history's
    # columns by its offsets (`offsets_order`) without an Op made for it.
    log_part: Hashable | None = None

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, **self.params}


def _by_key(op: Op) -> Hashable:
    return op.key


def _register_step(state: Any, op: Op) -> tuple[bool, Any]:
    f = op.f
    if f == "read":
        return op.result == state, state
    if f == "write":
        return True, op.value
    expected, new = op.value
    if op.outcome == "mismatch":
        return state != expected, state
    if state == expected:
        return True, new
    # An indeterminate compare-and-set may have found another value and changed nothing.
    return op.outcome == "unknown", state


def _json_key(value: Any) -> Hashable:
    return json.dumps(value, sort_keys=True) if isinstance(value, (list, dict)) else value


def _kv_step(state: str, op: Op) -> tuple[bool, Any]:
    f = op.f
    if f == "get":
        return op.result == state, state
    if f == "put":
        return True, op.value
    return True, state + op.value


def _log_step(state: int | None, op: Op) -> tuple[bool, Any]:
    """The append workload: an acknowledged append's offset comes after every
    offset acknowledged before it was invoked (offsets need not be dense: the
    log also holds the leaders' own records)."""
    if op.offset is None:
        return True, state
    return state is None or op.offset > state, op.offset


def _log_order(_key: object, ops: list[Op]) -> Ordered:
    """A keyed log's appends (Ops) decided by `offsets_order`."""
    placed = np.array([i for i, op in enumerate(ops) if op.offset is not None], dtype="int64")
    columns = (
        [ops[i].offset for i in placed],
        [ops[i].call[0] for i in placed],
        [ops[i].call[1] for i in placed],
        [ops[i].ret[0] for i in placed],
        [ops[i].ret[1] for i in placed],
    )
    return offsets_order(placed, *(np.array(c, dtype="int64") for c in columns))


def offsets_order(
    placed: np.ndarray,
    offsets: np.ndarray,
    call_time: np.ndarray,
    call_row: np.ndarray,
    ret_time: np.ndarray,
    ret_row: np.ndarray,
) -> Ordered:
    """The append log decided in O(n log n): acknowledged appends (at
    positions `placed` of the partition, with their offsets and their calls'
    and returns' (time, row)) are linearizable exactly when their offsets are
    distinct and none is at or below the offset of an append that returned
    before it was invoked (then offset order is a linearization, and it is
    the only one). Appends without an offset constrain nothing. The
    operation blamed is the first invoked of those that cannot be placed."""
    if not len(placed):
        return Ordered(True)
    # Calls and returns ranked together in the history's order of (time, row).
    times, rows = np.concatenate([call_time, ret_time]), np.concatenate([call_row, ret_row])
    rank = np.empty(len(times), dtype="int64")
    rank[np.lexsort((rows, times))] = np.arange(len(times))
    call, ret = rank[: len(placed)], rank[len(placed) :]
    by_ret = np.argsort(ret)
    highest = np.maximum.accumulate(offsets[by_ret])  # the highest offset among the first k returned
    returned = np.searchsorted(ret[by_ret], call)  # how many returned before each call
    below = (returned > 0) & (offsets <= highest[np.maximum(returned - 1, 0)])
    by_offset = np.argsort(offsets, kind="stable")
    twins = np.flatnonzero(offsets[by_offset][1:] == offsets[by_offset][:-1])  # two appends at one offset
    later = np.where(call[by_offset][twins] > call[by_offset][twins + 1], by_offset[twins], by_offset[twins + 1])
    stuck_at = np.concatenate([np.flatnonzero(below), later])
    if not len(stuck_at):
        return Ordered(True)
    stuck = stuck_at[np.argmin(call[stuck_at])]
    prefix = by_offset[offsets[by_offset] < offsets[stuck]]
    return Ordered(False, int(placed[stuck]), placed[prefix].tolist())


APPEND_LOG = "append-log"  # the partition of unkeyed appends (one log), beside the register keys


def _workload_part(op: Op) -> Hashable:
    """Each key apart; unkeyed appends (the reference quorum's one log) together.
    A key holds a list (etcd's appends) or a register, never both."""
    return APPEND_LOG if op.key is None else op.key


def _workload_step(state: Any, op: Op) -> tuple[bool, Any]:
    return _log_step(state, op) if op.f == "append" else _register_step(state, op)


def register(initial: Any = None) -> Model:
    """A read/write register per key (`initial`: every key's first value)."""
    return Model(
        "register",
        initial,
        _register_step,
        frozenset({"read", "write"}),
        frozenset({"read"}),
        _by_key,
        _json_key,
        {"initial": initial},
    )


def cas_register(initial: Any = None) -> Model:
    """A read/write/compare-and-set register per key; `cas` values are `[expected, new]`."""
    return Model(
        "cas-register",
        initial,
        _register_step,
        frozenset({"read", "write", "cas"}),
        frozenset({"read"}),
        _by_key,
        _json_key,
        {"initial": initial},
    )


def kv(initial: str = "") -> Model:
    """String values per key, with get, put and append (concatenation)."""
    return Model(
        "kv",
        initial,
        _kv_step,
        frozenset({"get", "put", "append"}),
        frozenset({"get"}),
        _by_key,
        params={"initial": initial},
        native="kv",
    )


def log() -> Model:
    """The append workload's log (one per key where appends are keyed),
    judged by the offsets of acknowledged appends; an append that never
    answered has no offset and constrains nothing."""
    return Model(
        "log",
        None,
        _log_step,
        frozenset({"append"}),
        frozenset({"append"}),
        _workload_part,
        order=_log_order,
        log_part=APPEND_LOG,
    )


def workloads() -> Model:
    """Our own workloads together (a simulated history mixes them): the
    append log as one partition, each register key as another."""
    return Model(
        "workloads",
        None,
        _workload_step,
        frozenset({"append", "read", "write", "cas"}),
        frozenset({"append", "read"}),
        _workload_part,
        _json_key,
        order=lambda key, ops: _log_order(key, ops) if key == APPEND_LOG else None,
        log_part=APPEND_LOG,
    )


MODELS: dict[str, Callable[..., Model]] = {
    "register": register,
    "cas-register": cas_register,
    "kv": kv,
    "log": log,
    "workloads": workloads,
}


def make_model(name: str, initial: Any = None) -> Model:
    """The model `name`; `initial` replaces its initial state where it has one."""
    if name not in MODELS:
        raise SettingError("model", f"unknown model {name!r}; known: {', '.join(MODELS)}")
    if name in ("log", "workloads"):
        return MODELS[name]()
    if initial is None:
        return MODELS[name]()
    return MODELS[name](initial)
