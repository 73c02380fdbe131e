"""The linearizability checker: hand-made anomalies and tricky legal cases,
and hypothesis-generated histories of a real linearizable register, which
must never be flagged."""

from __future__ import annotations

import dataclasses
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from checkers.linearizable import linearizable, operations
from checkers.models import cas_register, kv, log
from history.errors import HistoryError
from history.schema import HISTORY_COLUMNS, frame


def history(*ops):
    """ops: (process, f, key, invoke value, type, completion value, t_invoke, t_complete[, error])."""
    rows = []
    for process, f, key, call_value, kind, done_value, t0, t1, *error in ops:
        rows.append({"time_ns": t0, "process": process, "type": "invoke", "f": f, "key": key, "value": call_value})
        rows.append(
            {
                "time_ns": t1,
                "process": process,
                "type": kind,
                "f": f,
                "key": key,
                "value": done_value,
                "error": error[0] if error else None,
            }
        )
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
    for _point, process, start, end, kind, value, timed_out in sorted(points):
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


def spans(draw, most: int) -> list[tuple[int, int, int]]:
    """(process, start, end) of 1 to 4 clients' operations, each client's one after another."""
    found = []
    for process in range(draw(st.integers(1, 4))):
        clock = 0
        for _ in range(draw(st.integers(1, most))):
            start = clock + draw(st.integers(0, 3))
            end = clock = start + draw(st.integers(1, 6))
            found.append((process, start, end))
    return found


@st.composite
def any_histories(draw):
    """Concurrent clients doing anything at all on one register: most of these
    histories are not linearizable, some are."""
    ops = []
    for process, start, end in spans(draw, 5):
        f = draw(st.sampled_from(["read", "write", "cas"]))
        kind = draw(st.sampled_from(["ok", "ok", "info", "fail"]))
        value = draw(st.integers(0, 2))
        if f == "read":
            seen = draw(st.sampled_from([None, 0, 1, 2]))
            ops.append((process, "read", "k", None, "ok" if kind == "fail" else kind, j(seen), start, end))
        elif f == "write":
            ops.append((process, "write", "k", j(value), kind, j(value), start, end, "timeout"))
        else:
            pair = j([draw(st.sampled_from([None, 0, 1, 2])), value])
            ops.append(
                (process, "cas", "k", pair, kind, pair, start, end, "cas-mismatch" if kind == "fail" else "timeout")
            )
    return history(*ops)


@settings(max_examples=400, deadline=None)
@given(any_histories())
def test_the_compiled_and_the_python_search_agree(h):
    python, native = linearizable(h, engine="python"), linearizable(h, engine="native")
    assert python["valid"] == native["valid"]
    if python["anomalies"]:
        for field in ("index", "linearized_prefix", "window"):
            assert python["anomalies"][0][field] == native["anomalies"][0][field]
        # The prefix is a legal sequential run of the model.
        ops = {op.index: op for op in operations(h, cas_register())["k"]}
        state = None
        for index in python["anomalies"][0]["linearized_prefix"]:
            legal, state = cas_register().step(state, ops[index])
            assert legal


@st.composite
def kv_histories(draw):
    """Concurrent clients getting, putting and appending on two keys, each
    operation taking effect at a point inside its interval (gets see the
    string built so far), then some gets altered: linearizable histories with
    long appended strings, and histories that are not."""
    effects = []
    for process, start, end in spans(draw, 5):
        f = draw(st.sampled_from(["get", "put", "append", "append"]))
        effects.append((draw(st.integers(start, end)), process, start, end, f, draw(st.sampled_from(["a", "b"]))))
    state, ops = {}, []
    for _point, process, start, end, f, key in sorted(effects):
        if f == "get":
            seen = state.get(key, "")
            if draw(st.integers(0, 9)) == 0:
                seen = draw(st.sampled_from(["", "x", "y", "xy", "yx", seen + "x"]))
            ops.append((process, "get", key, None, "ok", j(seen), start, end))
            continue
        value = draw(st.sampled_from(["x", "y", "z"]))
        state[key] = value if f == "put" else state.get(key, "") + value
        kind = draw(st.sampled_from(["ok", "ok", "ok", "info"]))
        ops.append((process, f, key, j(value), kind, j(value), start, end, "timeout"))
    return history(*ops)


@settings(max_examples=300, deadline=None)
@given(kv_histories())
def test_the_compiled_kv_model_steps_as_the_python_one(h):
    """The kv model stepped on the compiled side gives the Python model's verdicts and anomalies."""
    python, native = linearizable(h, kv(), engine="python"), linearizable(h, kv(), engine="native")
    assert python["valid"] == native["valid"]
    for mine, theirs in zip(python["anomalies"], native["anomalies"]):
        assert {k: mine[k] for k in ("index", "linearized_prefix", "window")} == {
            k: theirs[k] for k in ("index", "linearized_prefix", "window")
        }


def test_kv_model_appends_and_gets_per_key():
    h = history(
        (0, "append", "a", j("x"), "ok", j("x"), 0, 10),
        (1, "append", "a", j("y"), "ok", j("y"), 5, 15),
        (2, "get", "a", None, "ok", j("yx"), 20, 30),
        (2, "get", "b", None, "ok", j(""), 40, 50),
    )
    assert linearizable(h, kv())["valid"] is True
    wrong = history((0, "put", "a", j("x"), "ok", j("x"), 0, 10), (2, "get", "a", None, "ok", j(""), 20, 30))
    assert linearizable(wrong, kv())["valid"] is False


def test_append_offsets_follow_real_time():
    def appends(first_offset, second_offset, keys=(None, None)):
        return frame(
            [
                {"index": 0, "time_ns": 0, "process": 0, "type": "invoke", "f": "append", "key": keys[0], "value": "1"},
                {
                    "index": 1,
                    "time_ns": 10,
                    "process": 0,
                    "type": "ok",
                    "f": "append",
                    "key": keys[0],
                    "value": "1",
                    "offset": first_offset,
                },
                {
                    "index": 2,
                    "time_ns": 20,
                    "process": 1,
                    "type": "invoke",
                    "f": "append",
                    "key": keys[1],
                    "value": "2",
                },
                {
                    "index": 3,
                    "time_ns": 30,
                    "process": 1,
                    "type": "ok",
                    "f": "append",
                    "key": keys[1],
                    "value": "2",
                    "offset": second_offset,
                },
            ],
            HISTORY_COLUMNS,
        )

    assert linearizable(appends(3, 5))["valid"] is True
    verdict = linearizable(appends(5, 3))
    assert verdict["valid"] is False and verdict["stats"]["model"] == {"name": "workloads"}
    # Keyed appends (etcd's lists): offsets are places in each key's own list.
    assert linearizable(appends(5, 3, ("a0", "a1")))["valid"] is True
    assert linearizable(appends(5, 3, ("a1", "a1")))["valid"] is False
    assert linearizable(appends(5, 3, ("a1", "a1")), log())["valid"] is False


def test_an_unkeyed_read_beside_the_log_is_decided_with_it():
    """An imported history's unkeyed read shares the log's partition: the log
    is then decided from Ops, as a keyed one is, not from its columns."""
    h = history((0, "append", None, "1", "ok", "1", 0, 10), (1, "read", None, None, "ok", None, 20, 30))
    verdict = linearizable(h)
    assert verdict["valid"] is True and verdict["stats"]["partitions"] == 1 and verdict["stats"]["operations"] == 2


def test_unknown_client_functions_are_an_error_not_a_pass():
    h = history((0, "frob", "k", None, "ok", None, 0, 10))
    with pytest.raises(HistoryError, match="frob"):
        linearizable(h, cas_register())


def test_every_partition_is_searched_when_asked():
    bad_a = [(0, "write", "a", j(1), "ok", j(1), 0, 10), (1, "read", "a", None, "ok", j(2), 20, 30)]
    bad_b = [(2, "write", "b", j(1), "ok", j(1), 0, 10), (3, "read", "b", None, "ok", j(2), 20, 30)]
    h = history(*bad_a, *bad_b)
    first = linearizable(h)
    assert first["valid"] is False and len(first["anomalies"]) == 1 and first["stats"]["unsearched_partitions"] == ["b"]
    assert len(linearizable(h, all_partitions=True)["anomalies"]) == 2


@st.composite
def append_histories(draw):
    """Concurrent appends to one log, acknowledged at offsets (some shared,
    some out of real-time order), timed out, or failed."""
    ops = []
    for process, start, end in spans(draw, 6):
        kind = draw(st.sampled_from(["ok", "ok", "ok", "info", "fail"]))
        ops.append((process, kind, draw(st.integers(0, 12)) if kind == "ok" else None, start, end))
    rows = []
    for process, kind, offset, t0, t1 in ops:
        value = j(f"{process}-{t0}")
        rows.append({"time_ns": t0, "process": process, "type": "invoke", "f": "append", "value": value})
        rows.append(
            {
                "time_ns": t1,
                "process": process,
                "type": kind,
                "f": "append",
                "value": value,
                "offset": offset,
                "error": None if kind == "ok" else "timeout",
            }
        )
    rows.sort(key=lambda r: r["time_ns"])
    return frame([{"index": i, **r} for i, r in enumerate(rows)], HISTORY_COLUMNS)


@settings(max_examples=500, deadline=None)
@given(append_histories())
def test_the_logs_order_decides_as_the_search_does(h):
    """The log's O(n log n) decision (offset order, from the history's
    columns) gives the search's verdict, and a stuck append whose offset an
    earlier-returned or concurrent one holds at or above; decided from Ops
    (as a keyed log is), it names the same anomaly."""
    searched = dataclasses.replace(log(), order=None, log_part=None)
    decided, slow = linearizable(h, log()), linearizable(h, searched)
    assert decided["valid"] == slow["valid"]
    assert linearizable(h, dataclasses.replace(log(), log_part=None))["anomalies"] == decided["anomalies"]
    if decided["anomalies"]:
        stuck = decided["anomalies"][0]["index"]
        ops = {op.index: op for op in operations(h, searched)["append-log"]}
        assert ops[stuck].outcome == "ok" and ops[stuck].offset is not None
        assert all(ops[i].offset < ops[stuck].offset for i in decided["anomalies"][0]["linearized_prefix"])


def test_a_search_past_its_memory_budget_gives_unknown_not_an_out_of_memory_kill():
    """Forty concurrent writes and a read no order explains: the search's
    memo grows by megabytes; with a budget of one byte it stops after its
    first slice of steps, with `unknown` naming the budget."""
    ops = [(p, "write", "k", j(p), "ok", j(p), 0, 1000) for p in range(40)]
    ops.append((99, "read", "k", None, "ok", j(-1), 2000, 2001))
    verdict = linearizable(history(*ops), budget_s=60, memory_budget=1)
    assert verdict["valid"] == "unknown" and verdict["error"].startswith("memory budget of"), verdict.get("error")
    assert linearizable(history(*ops[:3]), memory_budget=1)["valid"] is True  # decided within its first slice
