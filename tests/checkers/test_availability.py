"""The availability figures, on tables made by hand: elections, resignations
and epochs counted from the nodes' logged transitions, the time no node
led, fault windows opened by the nemesis and closed by what undoes them,
and the clients' success and latency inside and outside those windows."""

from __future__ import annotations

import json

import pytest

from checkers.availability import availability, fault_windows
from checkers.schema import EVENTS_COLUMNS, HISTORY_COLUMNS, frame

S = 1_000_000_000


def transitions(*rows: tuple[float, str, str, int | None]) -> object:
    return frame(
        [
            {
                "time_ns": int(t * S),
                "node": node,
                "event": "transition",
                "state": state,
                "epoch": epoch,
                "source": "log",
            }
            for t, node, state, epoch in rows
        ],
        EVENTS_COLUMNS,
    )


def history(*rows: dict) -> object:
    return frame(
        [{"index": i, **row} for i, row in enumerate(sorted(rows, key=lambda r: r["time_ns"]))], HISTORY_COLUMNS
    )


def op(t0: float, t1: float, type: str, process: int = 0) -> list[dict]:
    return [
        {"time_ns": int(t0 * S), "process": process, "type": "invoke", "f": "read"},
        {"time_ns": int(t1 * S), "process": process, "type": type, "f": "read"},
    ]


def fault(t0: float, f: str, nodes: list[str]) -> list[dict]:
    return [
        {"time_ns": int(t0 * S) - 1000, "process": -1, "type": "invoke", "f": f},
        {"time_ns": int(t0 * S), "process": -1, "type": "ok", "f": f, "node": json.dumps(nodes)},
    ]


def test_elections_resignations_and_time_without_a_leader():
    events = transitions(
        (1, "n1", "leader", 1), (5, "n1", "resigned", 1), (6, "n2", "candidate", 2), (7, "n2", "leader", 2)
    )
    found = availability(history(*op(0, 10, "ok")), events)["stats"]
    assert (found["leader_elections"], found["resignations"], found["epochs"]) == (2, 1, 2)
    assert found["leaderless_ms"] == pytest.approx(1000 + 2000)  # before n1 led, and from its resignation to n2


def test_a_window_lasts_from_a_fault_to_what_undoes_it_and_clients_are_counted_inside_and_out():
    rows = [*fault(2, "kill", ["n1"]), *fault(4, "start", ["n1"]), *fault(6, "pause", ["n2"])]
    rows += op(1, 1.1, "ok", 0) + op(2.5, 3.5, "info", 1) + op(3, 3.2, "ok", 2) + op(5, 5.01, "ok", 3)
    table = history(*rows)
    windows = fault_windows(table)
    assert list(zip(windows["f"], windows["start_ns"] // S, windows["end_ns"] // S)) == [
        ("kill", 2, 4),
        ("pause", 6, 6),
    ]
    clients = availability(table, transitions((0.5, "n1", "leader", 1)))["stats"]["clients"]
    assert clients["quiet"]["operations"] == 2 and clients["quiet"]["ok_rate"] == 1.0
    assert clients["kill"]["operations"] == 2 and clients["kill"]["ok_rate"] == 0.5
    assert clients["kill"]["latency_p50_ms"] == pytest.approx(200)  # only what was acknowledged


def test_no_transition_logged_is_a_run_without_a_leader():
    found = availability(history(*op(0, 3, "fail")), transitions())["stats"]
    assert found["leader_elections"] == 0 and found["leaderless_ms"] == pytest.approx(3000)
