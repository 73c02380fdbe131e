"""Signatures, what groups failing runs: per checker that failed, its
earliest anomaly's kind and the fault it is put down to (in force then: a
fault's window, or an instant fault's moment and the few seconds after;
else the next made, else the last), on hand-made tables."""

from __future__ import annotations

import json

from checkers.signatures import INSTANT_NS, NO_FAULT, anomaly_time_ns, fault_at, group, key, signatures
from history.schema import EVENTS_COLUMNS, HISTORY_COLUMNS, frame

S = 1_000_000_000


def nemesis(rows):
    """(time_s, f, touched) confirmed nemesis operations, each after its invocation."""
    made = []
    for t, f, touched in rows:
        made.append({"time_ns": int(t * S) - 1, "process": -1, "type": "invoke", "f": f})
        made.append({"time_ns": int(t * S), "process": -1, "type": "ok", "f": f, "node": json.dumps(touched)})
    return frame([{"index": i, **row} for i, row in enumerate(made)], HISTORY_COLUMNS)


EVENTS = frame(
    [{"time_ns": 0, "node": n, "event": "status", "state": s} for n, s in (("n1", "leader"), ("n2", "follower"))],
    EVENTS_COLUMNS,
)


def test_the_fault_is_the_one_in_force_else_the_next_made_else_the_last():
    history = nemesis([(1, "pause", ["n2"]), (3, "kill", ["n1"]), (5, "resume", ["n2"]), (6, "start", ["n1"])])
    assert fault_at(history, EVENTS, 2 * S) == "pause:follower"
    assert fault_at(history, EVENTS, 4 * S) == "kill:leader"
    assert fault_at(history, EVENTS, int(5.5 * S)) == "kill:leader"  # the pause was undone, the kill not yet
    assert fault_at(history, EVENTS, int(0.5 * S)) == "pause:follower"  # before any fault: the first made after
    assert fault_at(history, EVENTS, 7 * S) == "kill:leader"  # after every fault: the last made
    assert fault_at(nemesis([]), EVENTS, S) == NO_FAULT


def test_an_instant_fault_counts_for_a_few_seconds_after_it():
    history = nemesis([(1, "lose-unfsynced", ["n2"]), (20, "pause", ["n1"])])
    assert fault_at(history, EVENTS, 1 * S + INSTANT_NS - 1) == "lose-unfsynced:follower"
    assert fault_at(history, EVENTS, 1 * S + INSTANT_NS + 1) == "pause:leader"


def test_each_failed_checker_is_signed_by_its_earliest_anomaly():
    history = nemesis([(1, "pause", ["n2"]), (4, "resume", ["n2"])])
    checkers = {
        "election-safety": {"valid": True, "anomalies": []},
        "linearizable": {"valid": "unknown", "anomalies": []},
        "committed-data-loss": {
            "valid": False,
            "anomalies": [{"kind": "late", "time_ns": 9 * S}, {"kind": "lost", "index": 1}, {"kind": "untimed"}],
        },
    }
    [signed] = signatures(history, EVENTS, checkers)
    assert signed == {"checker": "committed-data-loss", "kind": "lost", "fault": "pause:follower", "time_ns": S}
    assert key(signed) == "committed-data-loss/lost/pause:follower"
    assert anomaly_time_ns({"times_ns": [3, 7]}, {}) == 7 and anomaly_time_ns({"index": 99}, {}) is None


def test_a_run_is_grouped_by_what_went_wrong_first():
    history = nemesis([(1, "pause", ["n2"]), (4, "resume", ["n2"])])
    checkers = {
        "linearizable": {"valid": False, "anomalies": [{"kind": "not-linearizable", "time_ns": 5 * S}]},
        "committed-data-loss": {"valid": False, "anomalies": [{"kind": "lost", "time_ns": 2 * S}]},
    }
    signed = signatures(history, EVENTS, checkers)
    assert [s["checker"] for s in signed] == ["committed-data-loss", "linearizable"]
    assert group({"valid": False, "signatures": signed}) == "committed-data-loss/lost/pause:follower"
    assert group({"valid": True, "signatures": []}) is None
