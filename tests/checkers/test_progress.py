"""`progress` from histories made by hand: a run whose clients were never
answered ok while no fault was in force fails it; one ok answer in a quiet
window, or too few quiet calls, or calls unanswered only under a fault, do
not. A run whose cluster agreed on no leader as it started (the harness's
`no-leader` event) fails it with no call at all; the same event from a
node, not the harness, does not."""

from __future__ import annotations

import pandas as pd
from hypothesis import given
from hypothesis import strategies as st

from checkers.availability import client_figures
from checkers.progress import MIN_QUIET_CALLS, NO_LEADER, progress
from history.schema import EVENTS_COLUMNS, HISTORY_COLUMNS, NEMESIS_PROCESS, frame

NO_EVENTS = frame([], EVENTS_COLUMNS)


def history(outcomes: list[str], fault_from: int | None = None) -> pd.DataFrame:
    """One client call per outcome, a second apart; a partition in force
    from call `fault_from` on, where given."""
    rows: list[dict] = []
    for i, outcome in enumerate(outcomes):
        at = (i + 1) * 1_000_000_000
        if i == fault_from:
            rows += [
                {"process": NEMESIS_PROCESS, "type": "invoke", "f": "partition", "time_ns": at - 2},
                {"process": NEMESIS_PROCESS, "type": "ok", "f": "partition", "time_ns": at - 1},
            ]
        rows += [
            {"process": i, "type": "invoke", "f": "append", "time_ns": at},
            {"process": i, "type": outcome, "f": "append", "time_ns": at + 500_000},
        ]
    return frame([{**row, "index": i} for i, row in enumerate(rows)], HISTORY_COLUMNS)


def judged(table: pd.DataFrame, events: pd.DataFrame = NO_EVENTS) -> dict:
    return progress(client_figures(table), events)


def test_a_cluster_that_acknowledged_nothing_while_nothing_was_wrong_fails():
    found = judged(history(["fail"] * 6 + ["info"] * 6))
    assert found["valid"] is False
    [anomaly] = found["anomalies"]
    assert anomaly["kind"] == "no-progress" and anomaly["calls"] == 12


def test_one_acknowledgement_in_a_quiet_window_is_progress():
    assert judged(history(["fail"] * 11 + ["ok"]))["valid"] is True


def test_calls_unanswered_under_a_fault_do_not_count():
    # Twelve calls unanswered while a partition held, two quiet ones acknowledged before it.
    assert judged(history(["ok", "ok"] + ["fail"] * 12, fault_from=2))["valid"] is True
    # The same partition over the whole run: no quiet call at all, nothing to judge.
    found = judged(history(["fail"] * 14, fault_from=0))
    assert found["valid"] is True and found["stats"]["quiet_calls"] == 0


@given(st.lists(st.sampled_from(["ok", "fail", "info"]), max_size=30))
def test_false_exactly_where_enough_quiet_calls_were_all_unacknowledged(outcomes):
    found = judged(history(outcomes))
    assert found["valid"] is (len(outcomes) < MIN_QUIET_CALLS or "ok" in outcomes)
    assert found["stats"]["quiet_acknowledged"] == outcomes.count("ok")


def test_a_cluster_that_agreed_on_no_leader_as_it_started_fails_with_no_call():
    said = "no agreed leader within 20.0 s (the leader each names: n1: no leader, n2: no leader, n3: n2)"
    start = {"time_ns": 7, "event": NO_LEADER, "reason": said, "source": "harness"}
    found = judged(history([]), frame([start], EVENTS_COLUMNS))
    assert found["valid"] is False
    [anomaly] = found["anomalies"]
    assert anomaly["kind"] == "no-leader" and said in anomaly["summary"] and anomaly["time_ns"] == 7
    # A node's own event of that name is not the harness's finding.
    assert judged(history([]), frame([{**start, "source": "n1"}], EVENTS_COLUMNS))["valid"] is True
