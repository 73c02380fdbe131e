"""The focused view of an operation no order explains, for report.html: only
the operations that matter (it, those concurrent with it, and the last ones
acknowledged before it on its key), each drawn with its value and its
result, as Jepsen's linear.svg and Porcupine's visualisation draw them, and
one sentence saying which read no order explains and why.

The sentence is worked out from the history for register reads (the stale
read: the value was overwritten, and the overwrite acknowledged, before the
read began); for other operations it says what the drawing holds.
"""

from __future__ import annotations

import html
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pandas as pd

from checkers.models import APPEND_LOG

WIDTH, LEFT, ROW = 1100, 100, 22
MOST_CONCURRENT = 12
LAST_BEFORE = 4
COLOURS = {"ok": "#2e9e4f", "fail": "#9aa3ad", "info": "#e08a1e", "open": "#e08a1e"}
WRITES = ("write", "cas", "put", "append")


@dataclass
class FocusOp:
    invoke: int
    done: int | None
    process: int
    f: str
    value: object
    result: object
    type: str  # ok | fail | info | open
    t0: int
    t1: int
    node: str | None
    offset: int | None = None

    def label(self) -> str:
        if self.f == "read" or self.f == "get":
            return f"r {_show(self.result) if self.type == 'ok' else '?'}"
        if self.f == "cas" and isinstance(self.value, list) and len(self.value) == 2:
            return f"cas {_show(self.value[0])}→{_show(self.value[1])}"
        at = f" @{self.offset}" if self.offset is not None and self.f == "append" else ""
        return f"{self.f[0] if self.f == 'write' else self.f} {_show(self.value)}{at}"

    def prose(self) -> str:
        """The operation in words: "write of 3", "compare-and-set from 1 to 2"."""
        if self.f == "cas" and isinstance(self.value, list) and len(self.value) == 2:
            return f"compare-and-set from {_show(self.value[0])} to {_show(self.value[1])}"
        return f"{self.f} of {_show(self.value)}"

    def written(self):
        """The value this operation would leave in a register, or None."""
        if self.f == "write":
            return self.value
        if self.f == "cas" and isinstance(self.value, list) and len(self.value) == 2:
            return self.value[1]
        return None


def _show(value) -> str:
    return "nil" if value is None else json.dumps(value) if not isinstance(value, str) else value


def _parse(text):
    if text is None or pd.isna(text):
        return None
    try:
        return json.loads(text)
    except ValueError:
        return text


def key_ops(history: pd.DataFrame, key) -> list[FocusOp]:
    """Client operations on `key` (all of them when the history has no keys), paired."""
    rows = history[history["process"] >= 0]
    if key is not None:
        rows = rows[rows["key"] == key]
    end = int(history["time_ns"].max()) if len(history) else 0
    pending: dict[int, Any] = {}  # the invocation's row (a named tuple of the history's columns)
    ops = []
    for row in rows.itertuples(index=False):
        if row.type == "invoke":
            pending[row.process] = row
            continue
        call = pending.pop(row.process, None)
        if call is not None:
            ops.append(
                FocusOp(
                    int(call.index),
                    int(row.index),
                    int(row.process),
                    str(call.f),
                    _parse(call.value),
                    _parse(row.value),
                    str(row.type),
                    int(call.time_ns),
                    int(row.time_ns),
                    None if pd.isna(row.node) else str(row.node),
                    None if pd.isna(row.offset) else int(row.offset),
                )
            )
    for call in pending.values():
        ops.append(
            FocusOp(
                int(call.index),
                None,
                int(call.process),
                str(call.f),
                _parse(call.value),
                None,
                "open",
                int(call.time_ns),
                end,
                None if pd.isna(call.node) else str(call.node),
            )
        )
    return sorted(ops, key=lambda op: op.t0)


def focus(history: pd.DataFrame, anomaly: dict) -> tuple[list[FocusOp], FocusOp | None, str]:
    """(the operations to draw, the one no order explains, the sentence)."""
    key = anomaly.get("key")
    ops = key_ops(history, None if key == APPEND_LOG else key)
    stuck = next((op for op in ops if op.invoke == anomaly.get("index")), None)
    if stuck is None:
        return [], None, anomaly.get("summary", "")
    window = set(anomaly.get("window") or [])
    concurrent = sorted(
        (op for op in ops if op.invoke in window and op is not stuck), key=lambda op: abs(op.t0 - stuck.t0)
    )[:MOST_CONCURRENT]
    before = [op for op in ops if op.type == "ok" and op.t1 < stuck.t0 and op not in concurrent]
    changed = [op for op in before if op.f in WRITES][-LAST_BEFORE:]
    reads = [op for op in before if op.f not in WRITES][-1:]
    drawn = sorted({id(op): op for op in [stuck, *concurrent, *changed, *reads]}.values(), key=lambda op: op.t0)
    return drawn, stuck, sentence(ops, stuck, anomaly, len(window) - 1)


def sentence(ops: list[FocusOp], stuck: FocusOp, anomaly: dict, concurrent: int) -> str:
    key = anomaly.get("key")
    on = f" of key {key}" if key not in (None, APPEND_LOG) else ""
    where = f", node {stuck.node}" if stuck.node else ""
    rows = f"rows {stuck.invoke} and {stuck.done}" if stuck.done is not None else f"row {stuck.invoke}"
    around = (
        f"the {concurrent} operations concurrent with it ({min(concurrent, MOST_CONCURRENT)} drawn)"
        if concurrent > 0
        else "nothing was concurrent with it"
    )
    generic = (
        f"No order of the operations explains process {stuck.process}'s {stuck.label()}{on} ({rows}{where}). "
        f"Drawn: it and the last operations acknowledged before it began; {around}."
    )
    if stuck.f == "append" and stuck.offset is not None:
        return (
            _append_sentence(
                ops,
                stuck,
                f"Process {stuck.process}'s append of {_show(stuck.value)}{on} was "
                f"acknowledged at offset {stuck.offset} ({rows}{where})",
            )
            or generic
        )
    if stuck.f != "read" or stuck.type != "ok":
        return generic
    seen = stuck.result
    writes = [op for op in ops if op.f in ("write", "cas") and op.type in ("ok", "info", "open")]
    acked_before = [op for op in writes if op.type == "ok" and op.t1 < stuck.t0]
    if not acked_before:
        return generic
    last = max(acked_before, key=lambda op: op.t1)
    if last.written() == seen:
        return generic
    of_seen = [op for op in writes if op.written() == seen and op is not last]
    text = (
        f"Process {stuck.process}'s read{on} returned {_show(seen)} ({rows}{where}). "
        f"Before it began, the {last.prose()} (row {last.invoke}, process {last.process}) had been acknowledged"
    )
    # A read that may already have seen the overwrite, before this one began.
    earlier_reads = [
        op for op in ops if op.f == "read" and op.type == "ok" and last.t0 < op.t1 < stuck.t0 and op.result != seen
    ]
    if earlier_reads:
        read = max(earlier_reads, key=lambda op: op.t1)
        text += f", and process {read.process} had already read {_show(read.result)} (row {read.invoke})"
    if seen is None:
        return text + ". The register was empty only before its first write, so the read is stale."
    if not of_seen:
        return text + f". Nothing else ever wrote {_show(seen)}, so no order lets this read see it."
    if all(op.type == "ok" and op.t1 < last.t0 for op in of_seen):
        shown = ", ".join(f"row {op.invoke}" for op in of_seen[-3:])
        return (
            text + f". Every write of {_show(seen)} ({shown}) had finished before the {last.prose()} began, so "
            f"{_show(seen)} was overwritten before this read began: the read is stale."
        )
    return text + f"; a write of {_show(seen)} may still have been in flight, but no order of all of them fits."


def _append_sentence(ops: list[FocusOp], stuck: FocusOp, opening: str) -> str | None:
    """An acknowledged log order that went back: an append acknowledged before
    this one began holds its offset or a later one."""
    if stuck.offset is None:
        return None
    offset = stuck.offset
    ahead = [
        op
        for op in ops
        if op.f == "append" and op.type == "ok" and op.offset is not None and op.t1 < stuck.t0 and op.offset >= offset
    ]
    if not ahead:
        return None
    first = max(ahead, key=lambda op: op.offset or 0)
    return (
        f"{opening}, but before it began the append of {_show(first.value)} (row {first.invoke}) had been "
        f"acknowledged at offset {first.offset}: the log's acknowledged order went back "
        "(acknowledged records were overwritten)."
    )


def render_focus(history: pd.DataFrame, anomaly: dict, number: int) -> str:
    """The sentence and the drawing, as HTML (empty when the op is not in the history).
    One row per operation, in the order they began; the time axis spans the
    operations that answered, so one that never answered (drawn to the right
    edge) or began long before (cut at the left edge, marked ◀) does not
    squeeze the rest into a corner."""
    drawn, stuck, text = focus(history, anomaly)
    if stuck is None:
        return ""
    answered = [op for op in drawn if op.type in ("ok", "fail")] + [stuck]
    start, end = min(op.t0 for op in answered), max(op.t1 for op in answered)
    pad = max((end - start) // 12, 1)
    start, end = start - pad, end + pad

    def x(t: int) -> float:
        return LEFT + (WIDTH - LEFT - 10) * (min(max(t, start), end) - start) / (end - start)

    body = [_op_bar(op, 8 + row * ROW, x, start, end, op is stuck) for row, op in enumerate(drawn)]
    bottom = 8 + len(drawn) * ROW
    began = x(stuck.t0)
    body.append(
        f"<line x1='{began:.1f}' y1='0' x2='{began:.1f}' y2='{bottom}' stroke='#c62828' stroke-dasharray='4 3'/>"
    )
    for k in range(6):
        t = start + (end - start) * k / 5
        anchor = ("start", "middle", "middle", "middle", "middle", "end")[k]
        body.append(f"<text x='{x(int(t)):.1f}' y='{bottom + 14}' text-anchor='{anchor}'>{t / 1e9:.3f} s</text>")
    height = bottom + 20
    legend = (
        "<div class='legend'><span><i class='swatch' style='background:#2e9e4f'></i>acknowledged</span>"
        "<span><i class='swatch' style='background:#e08a1e'></i>indeterminate (may take effect any time after it began: to the edge)</span>"
        "<span><i class='swatch' style='background:#9aa3ad'></i>failed</span>"
        "<span><i class='swatch' style='border:2px solid #c62828'></i>the operation no order explains "
        "(dashed: when it began)</span></div>"
    )
    return (
        f"<div class='focus' id='focus-{number}'><h3>Anomaly {number + 1}, up close</h3>"
        f"<p class='why'>{html.escape(text)}</p>{legend}"
        f"<svg width='{WIDTH}' height='{height}' viewBox='0 0 {WIDTH} {height}'>{''.join(body)}</svg></div>"
    )


def _op_bar(op: FocusOp, y: int, x: Callable[[int], float], start: int, end: int, stuck: bool) -> str:
    """One operation's bar, from its call to its answer, labelled where the label fits."""
    # An indeterminate operation may take effect at any time after it began.
    x0, x1 = x(op.t0), x(end if op.type in ("info", "open") else op.t1)
    outline = " stroke='#c62828' stroke-width='3'" if stuck else ""
    title = f"row {op.invoke}: {op.f} {_show(op.value)} → {op.type} {_show(op.result) if op.type == 'ok' else ''}"
    label = ("◀ " if op.t0 < start else "") + op.label() + ("" if op.type == "ok" else f" ({op.type})")
    room = 7 * len(label) + 12
    # The label inside a long bar, else after it, else before it.
    where, anchor, colour = (
        (x0 + 6, "start", "#fff")
        if x1 - x0 > room
        else (x1 + 6, "start", "#333")
        if x1 + room < WIDTH
        else (x0 - 6, "end", "#333")
    )
    return (
        f"<g class='focus-op'><text x='4' y='{y + 11}'>process {op.process}</text>"
        f"<rect x='{x0:.1f}' y='{y}' width='{max(x1 - x0, 2):.1f}' height='14' fill='{COLOURS[op.type]}'"
        f"{outline}><title>{html.escape(title)}</title></rect>"
        f"<text x='{where:.1f}' y='{y + 11}' text-anchor='{anchor}' style='fill:{colour}'>"
        f"{html.escape(label)}</text></g>"
    )
