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

import numpy as np
import pandas as pd

from .models import Model, Op, Ordered, workloads
from .result import result
from .wgl import new_search

# Steps a partition searches before the next one takes its turn.
SLICE_STEPS = 20_000

OUTCOMES = {"ok": "ok", "fail": "mismatch"}  # a fail that gets this far is a cas-mismatch
CLIENT_FUNCTIONS_ERROR = "{model} model: history has client functions it does not know: {fs}"


def _values(history: pd.DataFrame) -> list:
    """The value column parsed, all of it in one JSON document (a call per
    row costs more than the parsing: 3 s of 5 on 600k rows)."""
    texts = history["value"].astype(object).where(history["value"].notna(), "null").tolist()
    return json.loads("[" + ",".join(texts) + "]")


@contextlib.contextmanager
def _without_gc():
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


def operations(history: pd.DataFrame, model: Model) -> dict[object, list[Op]]:
    """Pair invocations with completions per process; keep what may have
    happened, split by the model's partition."""
    with _without_gc():
        return _operations(history, model)


def _operations(history: pd.DataFrame, model: Model) -> dict[object, list[Op]]:
    """Paired with arrays: each process's rows in history order, a completion
    taking the invocation just before it (a process waits for each answer)."""
    client = history[history["process"] >= 0]
    f = client["f"]
    known = f.isin(list(model.fs)).to_numpy(dtype=bool)
    if not known.all():
        unknown_fs = set(_objects(f[~known]).tolist())
        raise ValueError(CLIENT_FUNCTIONS_ERROR.format(model=model.name, fs=sorted(map(str, unknown_fs))))
    values = _values(client)
    process = client["process"].to_numpy(dtype="int64")
    order = np.lexsort((np.arange(len(client)), process))  # by process, then history order
    invoke = (client["type"] == "invoke").to_numpy(dtype=bool)[order]
    same = np.zeros(len(order), dtype=bool)
    same[1:] = process[order][1:] == process[order][:-1]
    paired = np.zeros(len(order), dtype=bool)  # a completion whose row before is its process's invocation
    paired[1:] = ~invoke[1:] & same[1:] & invoke[:-1]
    done, call = order[paired], order[np.flatnonzero(paired) - 1]
    last = np.ones(len(order), dtype=bool)  # a process's last row, an invocation: never answered
    last[:-1] = ~same[1:]
    pending = np.sort(order[last & invoke])
    types, errors = _objects(client["type"]), _objects(client["error"])
    kept = (types[done] != "fail") | (errors[done] == "cas-mismatch")
    done, call = done[kept], call[kept]
    by_time = np.argsort(done, kind="stable")  # completions in history order, as the ops list goes
    done, call = done[by_time], call[by_time]
    outcome = np.array([OUTCOMES.get(t, "unknown") for t in types[done]], dtype=object)
    fs, inert = _objects(f), list(model.inert_unknown)
    lasting = (outcome != "unknown") | ~np.isin(fs[call].astype(str), inert)
    done, call, outcome = done[lasting], call[lasting], outcome[lasting]
    pending = pending[~np.isin(fs[pending].astype(str), inert)]
    index, times = client["index"].to_numpy(dtype="int64"), client["time_ns"].to_numpy(dtype="int64")
    keys, offsets = _objects(client["key"]), _objects(client["offset"])
    last_time, after_all = (int(history["time_ns"].max()) + 1 if len(history) else 1), len(history)
    # Columns gathered for the ops at once, then one Op per row from plain lists.
    c_index, c_time, c_process = index[call].tolist(), times[call].tolist(), process[call].tolist()
    c_f, c_key, c_value = fs[call].tolist(), keys[call].tolist(), [values[i] for i in call.tolist()]
    d_index, d_time, d_offset = index[done].tolist(), times[done].tolist(), offsets[done].tolist()
    d_value = [values[i] for i in done.tolist()]
    ops = [
        Op(c_index[n], c_process[n], c_f[n], c_key[n], c_value[n], d_value[n], None if d_offset[n] is None else int(d_offset[n]),
           o, (c_time[n], c_index[n]), (d_time[n], d_index[n]))
        if o != "unknown" else
        Op(c_index[n], c_process[n], c_f[n], c_key[n], c_value[n], None, None, o, (c_time[n], c_index[n]), (last_time, after_all + n))
        for n, o in enumerate(outcome.tolist())
    ]  # fmt: skip
    ops += [Op(int(index[c]), int(process[c]), fs[c], keys[c], values[c], None, None, "unknown", (int(times[c]), int(index[c])),
               (last_time, after_all + len(ops) + n)) for n, c in enumerate(pending.tolist())]  # fmt: skip
    if model.partition is None:
        return {None: ops}
    parts: dict[object, list[Op]] = {}
    for op in ops:
        parts.setdefault(model.partition(op), []).append(op)
    return parts


def _objects(column: pd.Series) -> np.ndarray:
    """A column as Python objects, null as None."""
    values = column.to_numpy(dtype=object)
    values[pd.isna(values)] = None
    return values


def _stuck(ops: list[Op], op: Op, prefix: list[int]) -> dict:
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
) -> dict:
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
    anomalies = []
    spent = f"time budget of {budget_s} s"
    while running and time.monotonic() < deadline and (all_partitions or not anomalies):
        for key in list(running):
            outcome = running[key].run(SLICE_STEPS)
            if outcome is None:
                continue
            search = running.pop(key)
            if outcome is False:
                anomalies.append(_anomaly(key, parts[key], search))
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


def _search(key, ops: list[Op], model: Model, engine: str | None):
    ordered = model.order(key, ops) if model.order else None
    return _Decided(ordered) if ordered is not None else new_search(ops, model, engine)


def _anomaly(key, ops: list[Op], search) -> dict:
    detail = _stuck(ops, ops[search.stuck], search.prefix)
    where = f"key {key}: " if key is not None else ""
    return {
        "kind": "not-linearizable",
        "key": key,
        **detail,
        "summary": f"{where}no order of the operations explains {detail['f']} {detail['value']!r} "
        f"(row {detail['index']}); longest linearizable prefix: {len(detail['linearized_prefix'])} "
        f"operations; {len(detail['window'])} concurrent with it",
    }
