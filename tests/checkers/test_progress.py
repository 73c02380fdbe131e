"""`progress` from histories made by hand: a run whose clients were never
answered ok while no fault was in force fails it; one ok answer in a quiet
window, or too few quiet calls, or calls unanswered only under a fault, do
not. A run whose cluster agreed on no leader as it started (the harness's
`no-leader` event) fails it with no call at all; the same event from a
node, not the harness, does not.

Where the history is given (the target declares `steady_leaders`), a
leader that steps down with no fault made since before its election and a
majority heard from fails it (`unprovoked-step-down`), whether it resigned
or a later epoch unseated it; one a fault touched, or that stepped down
after the run's last row, does not.

Where the target declares the time it elects within (`elects_within_ms`),
a majority up and heard with no leader for longer fails it (`stuck`);
undeclared, or stuck no longer than that, it does not.

Where the target declares `recovers`, a healed cluster that did not settle
with every node answering (the harness's `unsettled` event) fails it
(`no-recovery`); undeclared, the same event is no finding."""

from __future__ import annotations

import pandas as pd
from hypothesis import given
from hypothesis import strategies as st

from checkers.availability import client_figures
from checkers.checker import Tables
from checkers.progress import CHECKER, MIN_QUIET_CALLS, NO_LEADER, UNSETTLED, progress
from history.schema import EVENTS_COLUMNS, FINAL_COLUMNS, HISTORY_COLUMNS, NEMESIS_PROCESS, frame

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


def test_a_healed_cluster_that_did_not_recover_fails_where_the_target_says_it_recovers():
    said = "nodes' high watermarks did not converge in 20 s (n1 441, n2 0, n3 0)"
    events = frame([{"time_ns": 9, "event": UNSETTLED, "reason": said, "source": "harness"}], EVENTS_COLUMNS)
    table = history(["ok"] * 12)
    found = progress(client_figures(table), events, recovers=True)
    assert found["valid"] is False
    [anomaly] = found["anomalies"]
    assert anomaly["kind"] == "no-recovery" and said in anomaly["summary"] and anomaly["time_ns"] == 9
    assert progress(client_figures(table), events)["valid"] is True  # undeclared: no finding
    # Judged even where no client was called (the rule applies on the event alone).
    tables = Tables(history([]), events, frame([], FINAL_COLUMNS), capabilities={"recovers": True})
    assert CHECKER.when(tables) and CHECKER.then(tables)["valid"] is False


S = 1_000_000_000


def transitions(*rows: tuple) -> list[dict]:
    """Logged transitions, each (seconds, node, state, epoch[, the leader it names])."""
    return [
        {
            "time_ns": int(row[0] * S),
            "node": row[1],
            "event": "transition",
            "state": row[2],
            "epoch": row[3],
            "leader": row[4] if len(row) > 4 else None,
            "source": "log",
        }
        for row in rows
    ]


def polls(until_s: int) -> list[dict]:
    """Every node answers a status poll every 200 ms up to `until_s`."""
    return [
        {"time_ns": k * S // 5, "node": n, "event": "status", "source": "poll"}
        for k in range(until_s * 5 + 1)
        for n in ("n1", "n2", "n3")
    ]


# n1 leads epoch 1 from 2 s, resigns at 5 s; n2 then wins epoch 2.
RESIGNED = transitions(
    (2, "n1", "leader", 1), (5, "n1", "resigned", 1), (5.5, "n2", "candidate", 2), (5.6, "n2", "leader", 2)
)


def calm(rows: list[dict], table: pd.DataFrame) -> dict:
    return progress(client_figures(table), frame(rows + polls(14), EVENTS_COLUMNS), table, steady_leaders=True)


def test_a_leader_that_resigned_with_nothing_wrong_fails():
    found = calm(RESIGNED, history(["ok"] * 14))
    assert found["valid"] is False and found["stats"]["unprovoked_step_downs"] == 1
    [anomaly] = found["anomalies"]
    assert anomaly["kind"] == "unprovoked-step-down" and (anomaly["node"], anomaly["epoch"]) == ("n1", 1)
    assert anomaly["time_ns"] == 5 * S and "after 3000.0 ms" in anomaly["summary"]
    # Not judged where the history is not given (a target that does not declare steady leaders).
    assert progress(client_figures(history(["ok"] * 14)), frame(RESIGNED + polls(14), EVENTS_COLUMNS))["valid"]


def test_a_fault_since_before_its_election_excuses_a_step_down():
    # A partition from the fourth second on (call 3): in force as n1 resigns.
    assert calm(RESIGNED, history(["ok"] * 14, fault_from=3))["valid"] is True


def test_a_leader_unseated_by_a_later_epoch_with_nothing_wrong_fails():
    """A follower stands only when its leader went unheard: with every node
    up and every link whole, a leader unseated so left it unanswered."""
    unseated = transitions(
        (2, "n1", "leader", 1, "n1"),
        (2.1, "n2", "follower", 1, "n1"),
        (4.9, "n2", "candidate", 2),
        (5, "n1", "follower", 2),
    )
    found = calm(unseated, history(["ok"] * 14))
    [anomaly] = found["anomalies"]
    assert anomaly["kind"] == "unprovoked-step-down" and (anomaly["node"], anomaly["epoch"]) == ("n1", 1)
    assert "was unseated by n2 standing for epoch 2 after 3000.0 ms" in anomaly["summary"]
    # The same under a fault since before its election is no finding.
    assert calm(unseated, history(["ok"] * 14, fault_from=1))["valid"] is True


def test_a_leader_unseated_by_a_node_that_never_heard_it_lead_is_an_election_race():
    """As a cluster without Pre-Vote came up (a correct run, CI 2026-12-08,
    its n4 and n5 here n1 and n2): both stood for epoch 1 together, n1 won
    it, and n2, which never followed it, stood again for epoch 2 and
    unseated it 4 ms in. Had n2 followed n1 first, it is judged."""
    race = [
        (1.15, "n1", "candidate", 1), (1.154, "n2", "candidate", 1), (1.4637, "n2", "candidate", 2),
        (1.4664, "n1", "leader", 1, "n1"), (1.4707, "n1", "unattached", 2), (1.4747, "n2", "leader", 2, "n2"),
    ]  # fmt: skip
    assert calm(transitions(*race), history(["ok"] * 14))["valid"] is True
    followed_first = transitions(
        (1.15, "n1", "candidate", 1), (1.4664, "n1", "leader", 1, "n1"), (1.47, "n2", "follower", 1, "n1"),
        (2.0, "n2", "candidate", 2), (2.01, "n1", "unattached", 2), (2.02, "n2", "leader", 2, "n2"),
    )  # fmt: skip
    assert calm(followed_first, history(["ok"] * 14))["valid"] is False


def test_a_step_down_unheard_by_a_majority_or_after_the_run_is_not_judged():
    table = history(["ok"] * 14)
    quiet_followers = [row for row in polls(14) if row["node"] == "n1" or row["time_ns"] < 3 * S]
    events = frame(RESIGNED + quiet_followers, EVENTS_COLUMNS)
    assert progress(client_figures(table), events, table, steady_leaders=True)["valid"] is True
    late = transitions((2, "n1", "leader", 1), (20, "n1", "resigned", 1))
    assert calm(late, table)["valid"] is True


@given(st.integers(0, 13), st.floats(1.001, 12))
def test_false_exactly_where_no_fault_touched_the_leadership(fault_from, resigned_s):
    """A partition from call `fault_from` to the end of the run: the
    leadership from 1 s to `resigned_s` is judged exactly where the fault
    began after it ended (a fault from its invocation; the fault's
    recovery margin reaches back before the election)."""
    rows = transitions((1, "n1", "leader", 1), (resigned_s, "n1", "resigned", 1))
    found = calm(rows, history(["ok"] * 14, fault_from=fault_from))
    fault_asked_s = fault_from + 1 - 2e-9
    assert found["valid"] is (fault_asked_s <= resigned_s)


def test_a_majority_left_without_a_leader_longer_than_the_target_elects_within_fails():
    # n1 leads from the start and resigns at 5 s, every node up and nothing touched; n2 leads
    # from 5.6 s: stuck 0.6 s.
    table = history(["ok"] * 14)
    led = transitions((0, "n1", "leader", 1), (0, "n2", "follower", 1), (0, "n3", "follower", 1))
    events = frame(led + RESIGNED[1:] + polls(14), EVENTS_COLUMNS)
    assert progress(client_figures(table), events, table, elects_within_ms=500)["valid"] is False
    assert progress(client_figures(table), events, table, elects_within_ms=600)["valid"] is True
    [anomaly] = progress(client_figures(table), events, table, elects_within_ms=500)["anomalies"]
    assert anomaly["kind"] == "stuck" and anomaly["time_ns"] == 5 * S and anomaly["ms"] == 600.0
    assert "n1, n2, n3 (a majority)" in anomaly["summary"] and "within 500 ms" in anomaly["summary"]
    # Undeclared: no finding (the target's capabilities, through the checker).
    tables = Tables(table, events, frame([], FINAL_COLUMNS), capabilities={"elects_within_ms": None})
    assert CHECKER.then(tables)["valid"] is True
    tables = Tables(table, events, frame([], FINAL_COLUMNS), capabilities={"elects_within_ms": 500})
    assert CHECKER.then(tables)["valid"] is False
