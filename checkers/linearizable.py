"""`linearizable`: is the history explainable by some total order of its
operations that respects real time, under a model (checkers/models.py)?
The search itself is in checkers/wgl.py; this module decides what enters it
and turns its outcome into a verdict. A partition whose model knows the only
order it could have (the append log: acknowledged offsets) is decided
without the search, in O(n log n). When the model partitions operations
(per key), each part is checked alone.

Which operations enter the search: `fail` ones did not happen and are
dropped, except a `fail` with error `cas-mismatch`, an observation (the
compare ran and saw another value). `info` ones, and invocations that never
completed, are indeterminate: they may take effect at any point after their
call, so their return is put after everything; an indeterminate operation
the model calls inert (a read) is dropped. Past the time budget the answer
is `unknown`, never a guess.

An invalid history's anomaly names the operation that no order could get
past and the longest linearizable prefix the search found (history rows,
in linearization order), so a report can draw both.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from history.errors import HistoryError
from history.schema import arrow, holds

from .cases import Anomaly, case
from .checker import Result, Rule, Tables
from .models import Model, Op, Ordered, offsets_order, workloads
from .mutex import LOCK_FS
from .pairing import pair
from .result import result
from .wgl import new_search

NAME = "linearizable"
# Steps a partition searches before the next one takes its turn.
SLICE_STEPS = 20_000

CLIENT_FUNCTIONS_ERROR = "{model} model: history has client functions it does not know: {fs}"


def _values(column: pd.Series, rows: np.ndarray) -> list[Any]:
    """The value column at `rows` parsed, all in one JSON document (a call
    per row costs more than the parsing: 3 s of 5 on 600k rows)."""
    values: list[Any] = json.loads(
        "[" + ",".join("null" if text is None else text for text in _pylist(column, rows)) + "]"
    )
    return values


def _pylist(column: pd.Series, rows: np.ndarray) -> list[Any]:
    """A column's values at `rows` as Python objects, null as None, taken in
    Arrow (a tenth of pandas' `iloc` and object conversion, which cost 4 ms
    a history: most of the time of checking Porcupine's 102 etcd histories)."""
    taken: list[Any] = arrow(column).take(pa.array(rows, type=pa.int64())).to_pylist()
    return taken


@contextlib.contextmanager
def _without_gc() -> Iterator[None]:
    """The cyclic garbage collector off while millions of small objects are
    made (values, Ops: no cycles among them); it would walk the growing heap
    again and again (4 of 7.5 s for 1M appends)."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


def operations(history: pd.DataFrame, model: Model) -> dict[object, list[Op] | LogColumns]:
    """Pair invocations with completions per process; keep what may have
    happened, split by the model's partition. The model's `log_part` (the
    unkeyed appends) stays as columns: no Op is made for it unless an
    anomaly is to be named."""
    with _without_gc():
        return _operations(history, model)


def _operations(history: pd.DataFrame, model: Model) -> dict[object, list[Op] | LogColumns]:
    """Kept: what may have happened (a definite failure did not, but for a
    cas-mismatch); an answer that says nothing of an inert operation is left out."""
    f = history["f"]
    unknown_fs = {"None" if pd.isna(name) else str(name) for name in f[history["process"] >= 0].unique()} - model.fs
    if unknown_fs:
        raise HistoryError(CLIENT_FUNCTIONS_ERROR.format(model=model.name, fs=sorted(unknown_fs)))
    pairs = pair(history)
    rows = Rows(history, int(history["time_ns"].max()) + 1 if len(history) else 1, len(history))
    ok, fail = rows.ok, rows.fail
    kept = ~fail[pairs.done] | holds(history["error"], ["cas-mismatch"])[pairs.done]
    done, call = pairs.done[kept], pairs.call[kept]
    known = ok[done] | fail[done]  # a fail that gets this far is a cas-mismatch
    inert = holds(f, list(model.inert_unknown))
    lasting = known | ~inert[call]
    done, call = done[lasting], call[lasting]
    pending = pairs.pending[~inert[pairs.pending]]
    in_log, pending_in_log = np.zeros(len(done), dtype=bool), np.zeros(len(pending), dtype=bool)
    if model.log_part is not None:
        unkeyed, append = history["key"].isna().to_numpy(), holds(f, ["append"])
        # Columns only where the unkeyed operations are all appends; any other
        # (an imported history's unkeyed read) goes into the log's partition as an Op.
        if not (unkeyed & ~append)[np.concatenate([call, pending])].any():
            in_log, pending_in_log = (unkeyed & append)[call], (unkeyed & append)[pending]
    ops = rows.ops(call[~in_log], done[~in_log], pending[~pending_in_log])
    if model.partition is None:
        return {None: ops}
    parts: dict[object, list[Op] | LogColumns] = {}
    if in_log.any() or pending_in_log.any():
        parts[model.log_part] = LogColumns(rows, call[in_log], done[in_log], pending[pending_in_log])
    for op in ops:
        part = parts.setdefault(model.partition(op), [])
        assert isinstance(part, list)  # the log's part is LogColumns, never a model partition's
        part.append(op)
    return parts


class Rows:
    """A history's rows, as arrays, from which Ops are made for the rows asked."""

    def __init__(self, history: pd.DataFrame, last_time: int, after_all: int) -> None:
        self.history, self.last_time, self.after_all = history, last_time, after_all
        self.index = history["index"].to_numpy(dtype="int64")
        self.times = history["time_ns"].to_numpy(dtype="int64")
        self.process = history["process"].to_numpy(dtype="int64")
        self.ok = holds(history["type"], ["ok"])
        self.fail = holds(history["type"], ["fail"])

    def column(self, name: str, rows: np.ndarray) -> list[Any]:
        """A column's values at `rows` as Python objects, null as None."""
        return _pylist(self.history[name], rows)

    def ops(self, call: np.ndarray, done: np.ndarray, pending: np.ndarray) -> list[Op]:
        """Completed operations (invocation and completion rows) in the order
        given, then those never answered: indeterminate ones end after
        everything, in that order."""
        values = _values(self.history["value"], np.concatenate([call, done, pending]))
        answered = self._answered(call, done, values[: len(call)], values[len(call) : len(call) + len(done)])
        return answered + self._never_answered(pending, values[len(call) + len(done) :], self.after_all + len(answered))

    def _answered(self, call: np.ndarray, done: np.ndarray, c_value: list[Any], d_value: list[Any]) -> list[Op]:
        """Operations with a completion: ok, a definite failure (a cas
        mismatch, an observation), or info (indeterminate: it ends after all)."""
        index, times, last_time = self.index, self.times, self.last_time
        outcome = np.where(self.ok[done], "ok", np.where(self.fail[done], "mismatch", "unknown")).tolist()
        c_index, c_time, c_process = index[call].tolist(), times[call].tolist(), self.process[call].tolist()
        c_f, c_key = self.column("f", call), self.column("key", call)
        d_index, d_time, d_offset = index[done].tolist(), times[done].tolist(), self.column("offset", done)
        return [
            Op(
                c_index[n],
                c_process[n],
                c_f[n],
                c_key[n],
                c_value[n],
                d_value[n],
                None if d_offset[n] is None else int(d_offset[n]),
                o,
                (c_time[n], c_index[n]),
                (d_time[n], d_index[n]),
            )
            if o != "unknown"
            else Op(
                c_index[n],
                c_process[n],
                c_f[n],
                c_key[n],
                c_value[n],
                None,
                None,
                o,
                (c_time[n], c_index[n]),
                (last_time, self.after_all + n),
            )
            for n, o in enumerate(outcome)
        ]

    def _never_answered(self, pending: np.ndarray, p_value: list[Any], after: int) -> list[Op]:
        """Invocations with no completion: indeterminate, ending after everything, in order."""
        index, times = self.index, self.times
        p_f, p_key = self.column("f", pending), self.column("key", pending)
        return [
            Op(
                int(index[c]),
                int(self.process[c]),
                p_f[n],
                p_key[n],
                p_value[n],
                None,
                None,
                "unknown",
                (int(times[c]), int(index[c])),
                (self.last_time, after + n),
            )
            for n, c in enumerate(pending.tolist())
        ]


class LogColumns:
    """The unkeyed appends, one log, kept as columns: its offsets fix the only
    order it can have (`offsets_order`), decided without an Op; the Ops (the
    same, in the same order as `Rows.ops` makes them) only to name an anomaly."""

    def __init__(self, rows: Rows, call: np.ndarray, done: np.ndarray, pending: np.ndarray) -> None:
        self.rows, self.call, self.done, self.pending = rows, call, done, pending

    def __len__(self) -> int:
        return len(self.done) + len(self.pending)

    def order(self) -> Ordered:
        offset = self.rows.history["offset"].iloc[self.done]
        placed = np.flatnonzero((self.rows.ok | self.rows.fail)[self.done] & offset.notna().to_numpy())
        call, done, index, times = self.call[placed], self.done[placed], self.rows.index, self.rows.times
        return offsets_order(
            placed, offset.iloc[placed].to_numpy(dtype="int64"), times[call], index[call], times[done], index[done]
        )

    def ops(self) -> list[Op]:
        return self.rows.ops(self.call, self.done, self.pending)


def _stuck(ops: list[Op], op: Op, prefix: list[int]) -> dict[str, Any]:
    """The operation no order could return, the operations concurrent with it,
    and the longest linearizable prefix found."""
    window = [o for o in ops if o.call <= op.ret and o.ret >= op.call]
    return {
        "index": op.index,
        "f": op.f,
        "value": op.result if op.f in ("read", "get") else op.value,
        "window": sorted(o.index for o in window),
        "linearized_prefix": [ops[j].index for j in prefix],
    }


def linearizable(
    history: pd.DataFrame,
    model: Model | None = None,
    budget_s: float = 30.0,
    engine: str | None = None,
    all_partitions: bool = False,
    memory_budget: int | None = None,
) -> dict[str, Any]:
    """The checker; `model` defaults to the models of our own workloads. Partitions are searched in turns, a slice of steps each, so a
    quick failure is not stuck behind a hard valid part; the first failure
    decides the verdict (Porcupine and Knossos stop there too) unless
    `all_partitions`, and partitions left unsearched are named in the stats.
    A search that grows the process by more than `memory_budget` bytes
    (default: a quarter of the machine's memory) stops there with `unknown`,
    as one past its time budget does: never an out-of-memory kill, Knossos's
    best-known failure."""
    deadline = time.monotonic() + budget_s
    model = model or workloads()
    memory_budget = default_memory_budget() if memory_budget is None else memory_budget
    parts = operations(history, model)
    before = resident_bytes()
    running = {key: _search(key, ops, model, engine) for key, ops in sorted(parts.items(), key=lambda kv: str(kv[0]))}
    anomalies: list[dict[str, Any]] = []
    spent = f"time budget of {budget_s} s"
    while running and time.monotonic() < deadline and (all_partitions or not anomalies):
        for key in list(running):
            outcome = running[key].run(SLICE_STEPS)
            if outcome is None:
                continue
            search = running.pop(key)
            if outcome is False:
                anomalies += not_linearizable(key, parts[key], search)
                if not all_partitions:
                    break
        if running and resident_bytes() - before > memory_budget:
            spent = f"memory budget of {memory_budget / 2**30:.3g} GiB"
            break
    stats = {"model": model.describe(), "partitions": len(parts), "operations": sum(len(v) for v in parts.values())}
    if running:
        stats["unsearched_partitions"] = sorted(str(key) for key in running)
    verdict = result(anomalies, stats)
    if running and not anomalies:
        verdict.update(valid="unknown", error=f"{spent} spent before deciding {sorted(map(str, running))}")
    return verdict


def resident_bytes() -> int:
    """This process's resident memory now (Linux)."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def default_memory_budget() -> int:
    """A quarter of the machine's memory."""
    return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 4


class _Decided:
    """A partition the model ordered itself (`Model.order`), behind the search's interface."""

    def __init__(self, ordered: Ordered) -> None:
        self.result, self.stuck, self.prefix = ordered.valid, ordered.stuck, ordered.prefix

    def run(self, _max_steps: int) -> bool:
        return self.result


def _search(key: object, ops: list[Op] | LogColumns, model: Model, engine: str | None) -> Any:
    if isinstance(ops, LogColumns):
        return _Decided(ops.order())
    ordered = model.order(key, ops) if model.order else None
    return _Decided(ordered) if ordered is not None else new_search(ops, model, engine)


@case(NAME, "not-linearizable")
def not_linearizable(key: object, ops: list[Op] | LogColumns, search: Any) -> list[Anomaly]:
    """No order of a key's operations, each taking effect at one moment
    between its call and its answer, explains what the clients were told.

    Named by the operation the search could not place, with the longest
    prefix it could order and the operations concurrent with it."""
    ops = ops.ops() if isinstance(ops, LogColumns) else ops
    detail = _stuck(ops, ops[search.stuck], search.prefix)
    where = f"key {key}: " if key is not None else ""
    return [
        {
            "key": key,
            **detail,
            "summary": f"{where}no order of the operations explains {detail['f']} {detail['value']!r} "
            f"(row {detail['index']}); longest linearizable prefix: {len(detail['linearized_prefix'])} "
            f"operations; {len(detail['window'])} concurrent with it",
        }
    ]


def _registers(t: Tables) -> bool:
    """Client operations a model checks: any but appends' and locks' own checkers take."""
    return bool(t.client_fs) and not t.client_fs & LOCK_FS


def _judged(t: Tables) -> Result:
    return linearizable(t.history, None, t.budget_s)


CHECKER = Rule(NAME, _registers, _judged, so_far=_judged)
