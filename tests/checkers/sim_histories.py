"""Histories from the deterministic simulation, in the run directory's
tables, so the checkers can be run on thousands of generated cluster
histories: the correct node's must never be flagged, and a planted bug's
must be."""

from __future__ import annotations

import pandas as pd

import targets
from checkers.membership import CHANGES
from history.schema import EVENTS_COLUMNS, FINAL_COLUMNS, HISTORY_COLUMNS, frame
from targets.kraft.sim.simulation import Simulation
from targets.kraft.target import completion, final_row, log_event
from workloads.generators import Operation

MS = 1_000_000
# The capabilities these tables are judged with: the reference quorum's, but
# for `steady_leaders`. Their history holds no nemesis rows (the simulation's
# faults are not written into it), so a leader that stepped down under a
# fault cannot be told from one that stepped down with nothing wrong.
KRAFT = {**targets.get("kraft").capabilities.as_json(), "steady_leaders": False}


def operation(command: dict) -> Operation:
    op = command["op"]
    if op == "append":
        return Operation("append", None, command["value"])
    if op == "write":
        return Operation("write", command["key"], command["value"])
    if op == "cas":
        return Operation("cas", command["key"], [command["expected"], command["new"]])
    return Operation("read", command["key"], None)


def voter_change_rows(sim: Simulation, request_id: int, node: str, command: dict, invoke_ms: int, end_ms: int):
    """An operator's voter change as the harness records it: process -1, value naming the replica."""
    value = {k: command[k] for k in ("node", "directory_id", "ack_when_committed") if k in command}
    answer = sim.replies.get(request_id)
    if answer is None:
        fields = {"type": "info", "error": "never answered"}
    elif "error" in answer:
        fields = {"type": "fail", "error": answer["error"]}
    else:
        fields = {"type": "ok", "offset": answer["offset"], "epoch": answer["epoch"]}
    common = {"process": -1, "f": command["op"], "value": value, "node": node}
    return [
        (invoke_ms, 0, {**common, "type": "invoke"}),
        (sim.answered_ms.get(request_id, end_ms), 1, {**common, **fields}),
    ]


def tables(sim: Simulation) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(history, events, final) of a finished simulation; every request is its own process."""
    end_ms = sim.now_ms + 1
    rows = []
    for request_id, (node, command, invoke_ms) in sim.requests.items():
        if command["op"] in CHANGES:
            rows += voter_change_rows(sim, request_id, node, command, invoke_ms, end_ms)
            continue
        op = operation(command)
        rows.append(
            (
                invoke_ms,
                0,
                {"process": request_id, "type": "invoke", "f": op.f, "key": op.key, "value": op.value, "node": node},
            )
        )
        answer = sim.replies.get(request_id)
        fields = completion(op.f, op.value, answer, None if answer else "never answered")
        rows.append(
            (
                sim.answered_ms.get(request_id, end_ms),
                1,
                {"process": request_id, "f": op.f, "key": op.key, "node": node, **fields},
            )
        )
    rows.sort(key=lambda r: (r[0], r[1]))
    history = frame(
        [{"index": i, "time_ns": ms * MS + i, **row} for i, (ms, _, row) in enumerate(rows)], HISTORY_COLUMNS
    )
    # As real nodes' clocks do, every event its own instant, in the order they happened.
    events_frame = frame(
        [log_event({"node": node, **event}, ms * MS + i) for i, (ms, node, event) in enumerate(sim.events)],
        EVENTS_COLUMNS,
    )
    final = [
        final_row(node, offset, entry.epoch, entry.data)
        for node, core in sim.nodes.items()
        if core is not None
        for offset, entry in core.committed_entries()
    ]
    return history, events_frame, frame(final, FINAL_COLUMNS)
