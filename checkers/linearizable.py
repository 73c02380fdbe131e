"""`linearizable`: is the register history explainable by some total order of
its operations that respects real time? Wing & Gong's search with Lowe's
memoisation (as Porcupine does it): operations become call and return
entries in time order; the search linearizes a pending call, or backtracks,
and never revisits a (set of linearized operations, register value) it has
already seen. The history is split per key first: keys are independent.

Operations that definitely did not happen (`fail`, except `cas-mismatch`)
are dropped; `info` writes and compare-and-sets may have happened at any time
after their call, so their return is put at the end of the history (an
`info` compare-and-set may also have found another value and changed
nothing); `info` reads constrain nothing and are dropped. A `cas-mismatch` is an observation:
the compare ran and saw another value. Past `budget_s` the answer is
`unknown`, never a guess.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

import pandas as pd

from .result import result

_MISSING = object()


@dataclass
class _Op:
    index: int  # history row of the invoke
    process: int
    f: str
    value: object  # write: value; cas: [expected, new]; read: value read
    mismatch: bool
    call: int
    ret: int
    unknown: bool = False  # info: may or may not have taken effect


def _step(state, op: _Op):
    """(legal, new state) of applying op to the register's value."""
    if op.f == "write":
        return True, op.value
    if op.f == "read":
        return op.value == state, state
    expected, new = op.value
    if op.mismatch:
        return state != expected, state
    if state == expected:
        return True, new
    # An unacknowledged compare-and-set that found another value changed nothing.
    return op.unknown, state


def operations(history: pd.DataFrame) -> dict[str, list[_Op]]:
    """Pair invokes with completions per process; keep what may have happened."""
    rows = history[(history["process"] >= 0) & history["f"].isin(["read", "write", "cas"])]
    end = int(history["time_ns"].max()) + 1 if len(history) else 1
    by_key: dict[str, list[_Op]] = {}
    pending: dict[int, pd.Series] = {}
    for row in rows.itertuples(index=False):
        if row.type == "invoke":
            pending[row.process] = row
            continue
        call = pending.pop(row.process, None)
        if call is None:
            continue
        mismatch = row.type == "fail" and row.error == "cas-mismatch"
        if (row.type == "fail" and not mismatch) or (row.type == "info" and row.f == "read"):
            continue
        source = row if row.f == "read" else call
        value = None if pd.isna(source.value) else json.loads(source.value)
        ret = end if row.type == "info" else int(row.time_ns)
        by_key.setdefault(call.key, []).append(
            _Op(int(call.index), int(call.process), row.f, value, mismatch, int(call.time_ns), ret, row.type == "info")
        )
    for process, call in pending.items():  # invoked, never completed: like info
        if call.f != "read":
            value = None if pd.isna(call.value) else json.loads(call.value)
            by_key.setdefault(call.key, []).append(
                _Op(int(call.index), int(process), call.f, value, False, int(call.time_ns), end, True)
            )
    return by_key


def check_key(ops: list[_Op], deadline: float) -> tuple[bool | None, dict]:
    """True, False (with the stuck point), or None when past the deadline."""
    if not ops:
        return True, {}
    # Entries in time order; a return sorts before a call at the same time
    # (it happened first), and every call before its own return.
    entries = sorted(
        [(op.call, 1, i) for i, op in enumerate(ops)] + [(op.ret, 0, i) for i, op in enumerate(ops)],
        key=lambda e: (e[0], e[1]),
    )
    order = [(kind, i) for _, kind, i in entries]
    n = len(order)
    # Doubly linked list over entry positions, so lifting an operation out is O(1).
    nxt = list(range(1, n + 1))
    prv = list(range(-1, n - 1))
    ret_pos = {i: p for p, (kind, i) in enumerate(order) if kind == 0}
    head = 0 if n else n

    def lift(p_call: int, op_i: int) -> None:
        nonlocal head
        for p in (p_call, ret_pos[op_i]):
            if prv[p] >= 0:
                nxt[prv[p]] = nxt[p]
            else:
                head = nxt[p]
            if nxt[p] < n:
                prv[nxt[p]] = prv[p]

    def unlift(p_call: int, op_i: int) -> None:
        nonlocal head
        for p in (ret_pos[op_i], p_call):
            if prv[p] >= 0:
                nxt[prv[p]] = p
            else:
                head = p
            if nxt[p] < n:
                prv[nxt[p]] = p

    state = None
    linearized = 0
    seen: set[tuple[int, object]] = set()
    stack: list[tuple[int, int, object]] = []  # (call position, op, state before)
    p = head
    best_depth, stuck_at = 0, None
    steps = 0
    while head < n:
        steps += 1
        if steps % 4096 == 0 and time.monotonic() > deadline:
            return None, {}
        kind, i = order[p]
        if kind == 1:
            legal, new_state = _step(state, ops[i])
            key = (linearized | (1 << i), _hashable(new_state))
            if legal and key not in seen:
                seen.add(key)
                stack.append((p, i, state))
                state, linearized = new_state, key[0]
                lift(p, i)
                if len(stack) > best_depth:
                    best_depth = len(stack)
                p = head
                continue
            p = nxt[p]
            continue
        # A return whose call is not linearized yet: backtrack.
        if not stack:
            return False, _stuck(ops, stuck_at or ops[i], best_depth)
        if len(stack) >= best_depth:
            # The return that the deepest partial order could not get past.
            stuck_at = ops[i]
        p_call, j, state = stack.pop()
        linearized &= ~(1 << j)
        unlift(p_call, j)
        p = nxt[p_call]
    return True, {}


def _hashable(value):
    return json.dumps(value, sort_keys=True) if isinstance(value, (list, dict)) else value


def _stuck(ops: list[_Op], op: _Op, depth: int) -> dict:
    """The operation no order could return, and the operations concurrent with it."""
    window = [o for o in ops if o.call <= op.ret and o.ret >= op.call]
    return {
        "index": op.index,
        "f": op.f,
        "value": op.value,
        "window": sorted(o.index for o in window),
        "linearized_before_stuck": depth,
    }


def linearizable(history: pd.DataFrame, budget_s: float = 30.0) -> dict:
    deadline = time.monotonic() + budget_s
    anomalies, undecided = [], []
    by_key = operations(history)
    for key, ops in sorted(by_key.items()):
        ok, detail = check_key(ops, deadline)
        if ok is None:
            undecided.append(key)
        elif not ok:
            anomalies.append(
                {
                    "kind": "not-linearizable",
                    "key": key,
                    **detail,
                    "summary": f"key {key}: no order of its operations explains {detail['f']} "
                    f"{detail['value']!r} (row {detail['index']}) given the {len(detail['window'])} concurrent ones",
                }
            )
    stats = {"keys": len(by_key), "operations": sum(len(v) for v in by_key.values())}
    verdict = result(anomalies, stats)
    if undecided and not anomalies:
        verdict.update(valid="unknown", error=f"time budget of {budget_s} s spent before deciding keys {undecided}")
    return verdict
