"""The linearizability checker: hand-made anomalies and tricky legal cases,
and hypothesis-generated histories of a real linearizable register, which
must never be flagged."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from checkers.linearizable import linearizable
from results.history import HISTORY_COLUMNS, frame


def history(*ops):
    """ops: (process, f, key, invoke value, type, completion value, t_invoke, t_complete[, error])."""
    rows = []
    for process, f, key, call_value, kind, done_value, t0, t1, *error in ops:
        rows.append({"time_ns": t0, "process": process, "type": "invoke", "f": f, "key": key, "value": call_value})
        rows.append({"time_ns": t1, "process": process, "type": kind, "f": f, "key": key, "value": done_value,
                     "error": error[0] if error else None})  # fmt: skip
    rows.sort(key=lambda r: r["time_ns"])
    return frame([{"index": i, **r} for i, r in enumerate(rows)], HISTORY_COLUMNS)


def j(value):
    return json.dumps(value)


def test_sequential_reads_see_the_last_write():
    h = history(
        (0, "write", "k", j(1), "ok", j(1), 0, 10),
        (1, "read", "k", None, "ok", j(1), 20, 30),
        (0, "write", "k", j(2), "ok", j(2), 40, 50),
        (1, "read", "k", None, "ok", j(2), 60, 70),
    )
    assert linearizable(h)["valid"] is True


def test_a_stale_read_is_caught_with_its_window():
    h = history(
        (0, "write", "k", j(1), "ok", j(1), 0, 10),
        (0, "write", "k", j(2), "ok", j(2), 20, 30),
        (1, "read", "k", None, "ok", j(1), 40, 50),
    )
    verdict = linearizable(h)
    assert verdict["valid"] is False
    anomaly = verdict["anomalies"][0]
    assert anomaly["key"] == "k" and anomaly["f"] == "read" and anomaly["value"] == 1


def test_concurrent_operations_may_take_either_order():
    h = history(
        (0, "write", "k", j(1), "ok", j(1), 0, 100),
        (1, "read", "k", None, "ok", j(1), 10, 20),
        (2, "read", "k", None, "ok", None, 30, 40),
    )
    # read 1 then read None is impossible: once 1 was seen, the write took effect.
    assert linearizable(h)["valid"] is False
    h = history(
        (0, "write", "k", j(1), "ok", j(1), 0, 100),
        (2, "read", "k", None, "ok", None, 10, 20),
        (1, "read", "k", None, "ok", j(1), 30, 40),
    )
    assert linearizable(h)["valid"] is True


def test_info_writes_may_or_may_not_have_happened():
    took = history((0, "write", "k", j(7), "info", j(7), 0, 10, "timeout"), (1, "read", "k", None, "ok", j(7), 50, 60))
    never = history((0, "write", "k", j(7), "info", j(7), 0, 10, "timeout"), (1, "read", "k", None, "ok", None, 50, 60))
    assert linearizable(took)["valid"] is True and linearizable(never)["valid"] is True


def test_failed_writes_did_not_happen():
    h = history((0, "write", "k", j(7), "fail", j(7), 0, 10, "not-leader"), (1, "read", "k", None, "ok", j(7), 50, 60))
    assert linearizable(h)["valid"] is False


def test_cas_and_cas_mismatch_are_observations():
    ok = history(
        (0, "write", "k", j(1), "ok", j(1), 0, 10),
        (1, "cas", "k", j([1, 2]), "ok", j([1, 2]), 20, 30),
        (2, "cas", "k", j([1, 3]), "fail", j([1, 3]), 40, 50, "cas-mismatch"),
        (0, "read", "k", None, "ok", j(2), 60, 70),
    )
    assert linearizable(ok)["valid"] is True
    lie = history(
        (0, "write", "k", j(1), "ok", j(1), 0, 10),
        (2, "cas", "k", j([1, 3]), "fail", j([1, 3]), 40, 50, "cas-mismatch"),
    )
    assert linearizable(lie)["valid"] is False


def test_keys_are_independent():
    h = history((0, "write", "a", j(1), "ok", j(1), 0, 10), (1, "read", "b", None, "ok", None, 20, 30))
    assert linearizable(h)["valid"] is True


def test_the_time_budget_gives_unknown_not_a_guess():
    ops = [(p, "write", "k", j(p), "ok", j(p), 0, 1000) for p in range(40)]
    ops.append((99, "read", "k", None, "ok", j(-1), 2000, 2001))
    verdict = linearizable(history(*ops), budget_s=0.05)
    assert verdict["valid"] in ("unknown", False)
    assert verdict["valid"] == "unknown" or verdict["anomalies"]


@st.composite
def linearizable_histories(draw):
    """Concurrent clients on one register; each op takes effect at a point
    inside its [invoke, complete] interval, so the history is linearizable."""
    ops, state = [], None
    points = []
    for process in range(draw(st.integers(1, 4))):
        clock = 0
        for _ in range(draw(st.integers(1, 6))):
            start = clock + draw(st.integers(0, 5))
            point = start + draw(st.integers(1, 5))
            end = point + draw(st.integers(1, 5))
            kind = draw(st.sampled_from(["read", "write", "cas"]))
            value = draw(st.integers(0, 3))
            points.append((point, process, start, end, kind, value, draw(st.booleans())))
            clock = end
    for point, process, start, end, kind, value, timed_out in sorted(points):
        if kind == "write":
            state = value
            ops.append((process, "write", "k", j(value), "info" if timed_out else "ok", j(value), start, end))
        elif kind == "read":
            ops.append((process, "read", "k", None, "ok", j(state), start, end))
        else:
            expected = draw(st.sampled_from([state, value]))
            if expected == state:
                state = value
                ops.append((process, "cas", "k", j([expected, value]), "ok", j([expected, value]), start, end))
            else:
                kind = "info" if timed_out else "fail"
                error = "timeout" if timed_out else "cas-mismatch"
                ops.append((process, "cas", "k", j([expected, value]), kind, j([expected, value]), start, end, error))
    return history(*ops)


@settings(max_examples=300, deadline=None)
@given(linearizable_histories())
def test_generated_linearizable_histories_are_never_flagged(h):
    assert linearizable(h)["valid"] is True


def test_an_info_cas_that_could_never_succeed_is_no_anomaly():
    h = history(
        (0, "write", "k", j(1), "ok", j(1), 0, 10),
        (1, "cas", "k", j([8, 9]), "info", j([8, 9]), 20, 30, "timeout"),
        (0, "read", "k", None, "ok", j(1), 40, 50),
    )
    assert linearizable(h)["valid"] is True
