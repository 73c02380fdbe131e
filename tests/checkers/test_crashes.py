"""`node-crashes` (checkers/crashes.py) on hand-made tables: a node that
halted or exited on its own is a finding, once per stop; a stop of a node
that a full disk or damaged files touched, while in force or just after,
is a correct node's fail-stop and is not counted."""

from __future__ import annotations

import json

import pandas as pd

from checkers.crashes import GRACE_NS, node_crashes
from checkers.verdict import check_tables
from history.schema import EVENTS_COLUMNS, HISTORY_COLUMNS, frame

S = 1_000_000_000


def nemesis(*ops: tuple[int, str, list]) -> pd.DataFrame:
    rows = []
    for t, f, nodes in ops:
        rows.append({"time_ns": t, "process": -1, "type": "invoke", "f": f})
        rows.append({"time_ns": t + 1000, "process": -1, "type": "ok", "f": f, "node": json.dumps(nodes)})
    return frame([{**row, "index": i} for i, row in enumerate(rows)], HISTORY_COLUMNS)


def stop(t: int, node: str, event: str = "halted", reason: str = "internal error: TypeError: boom") -> dict:
    return {"time_ns": t, "node": node, "event": event, "reason": reason}


def test_a_node_that_halts_or_exits_on_its_own_is_a_finding_once_per_stop():
    events = frame(
        [stop(5 * S, "n1"), stop(6 * S, "n1", "exited", "exited with code 2"), stop(9 * S, "n2", "exited", "exit 1")],
        EVENTS_COLUMNS,
    )
    found = node_crashes(nemesis(), events)
    assert found["valid"] is False
    assert [a["summary"] for a in found["anomalies"]] == [
        "n1 halted: internal error: TypeError: boom",
        "n2 exited on its own: exit 1",
    ]


def test_a_stop_on_a_full_disk_or_damaged_files_is_fail_stop():
    history = nemesis(
        (2 * S, "disk-full", ["n1"]),
        (8 * S, "disk-space", ["n1"]),
        (20 * S, "corrupt", ["n2", {"file": "log.bin", "mode": "flip"}]),
    )
    events = frame(
        [
            stop(4 * S, "n1", reason="No space left on device writing log"),
            stop(20 * S + GRACE_NS // 2, "n2", "exited", "exited with code 1: checksum mismatch"),
            stop(8 * S + 2 * GRACE_NS, "n1", reason="internal error: KeyError: 3"),  # long after the disk had room
        ],
        EVENTS_COLUMNS,
    )
    found = node_crashes(history, events)
    assert [a["reason"] for a in found["anomalies"]] == ["internal error: KeyError: 3"]
    assert found["stats"] == {"stops": 3, "excused": 2, "anomalies": 1}


def test_the_verdict_holds_it_only_where_a_node_stopped():
    history = nemesis()
    quiet = check_tables(history, frame([], EVENTS_COLUMNS), frame([], {"node": "string"}))
    assert "node-crashes" not in quiet["checkers"]
    stopped = check_tables(history, frame([stop(S, "n3")], EVENTS_COLUMNS), frame([], {"node": "string"}))
    assert stopped["checkers"]["node-crashes"]["valid"] is False and stopped["valid"] is False
