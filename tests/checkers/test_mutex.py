"""The mutual-exclusion checker on hand-made lock histories: holds trimmed to
their leases, overlapping holds, adds that overwrote each other, lost adds,
and the legal cases (a lease that ran out before the next grant) that must
not be flagged."""

from __future__ import annotations

import json

from checkers.mutex import mutual_exclusion
from history.schema import FINAL_COLUMNS, HISTORY_COLUMNS, frame

MS = 1_000_000
TTL = json.dumps({"ttl_ms": 3000})


def history(*ops):
    """ops: (process, f, invoke value, type, completion value, t0_ms, t1_ms[, offset])."""
    rows = []
    for process, f, call, kind, done, t0, t1, *offset in ops:
        key = "guarded" if f == "add" else "lock"
        rows.append({"time_ns": t0 * MS, "process": process, "type": "invoke", "f": f, "key": key, "value": call})
        rows.append(
            {
                "time_ns": t1 * MS,
                "process": process,
                "type": kind,
                "f": f,
                "key": key,
                "value": done,
                "offset": offset[0] if offset else None,
            }
        )
    rows.sort(key=lambda r: r["time_ns"])
    return frame([{"index": i, **r} for i, r in enumerate(rows)], HISTORY_COLUMNS)


def guarded(lists: dict[str, list]):
    return frame(
        [
            {"node": node, "key": "guarded", "offset": o, "value": v}
            for node, items in lists.items()
            for o, v in enumerate(items)
        ],
        FINAL_COLUMNS,
    )


def session(process, key, value, offset, start_ms, release_ms=None):
    """Acquire at start (granted 10 ms later), add, release."""
    release_ms = release_ms or start_ms + 100
    return [
        (process, "acquire", TTL, "ok", key, start_ms, start_ms + 10),
        (process, "add", value, "ok", value, start_ms + 20, start_ms + 30, offset),
        (process, "release", key, "ok", key, release_ms, release_ms + 5),
    ]


def test_holds_one_after_another_and_every_add_kept_is_valid():
    h = history(*session(0, "lock/a", "1", 0, 0), *session(1, "lock/b", "2", 1, 200))
    verdict = mutual_exclusion(h, guarded({"n1": ["1", "2"], "n2": ["1", "2"]}))
    assert verdict["valid"] is True and verdict["stats"]["acquired"] == 2 and verdict["stats"]["late_grants"] == 0


def test_two_holds_at_once_are_caught_naming_both_grants():
    h = history(*session(0, "lock/a", "1", 0, 0, release_ms=500), *session(1, "lock/b", "2", 1, 200))
    verdict = mutual_exclusion(h, guarded({"n1": ["1", "2"]}))
    [overlap] = verdict["anomalies"]
    assert overlap["kind"] == "overlapping-holds" and overlap["keys"] == ["lock/a", "lock/b"]
    assert "lock/b" in overlap["summary"] and "lock/a" in overlap["summary"]


def test_a_hold_ends_when_its_lease_may_have_run_out():
    # A never released, but its lease (3 s from its acquire) had run out when B was granted: no overlap.
    h = history((0, "acquire", TTL, "ok", "lock/a", 0, 10), *session(1, "lock/b", "2", 0, 3500))
    assert mutual_exclusion(h, guarded({"n1": ["2"]}))["valid"] is True
    # Granted more than a TTL after it asked: a hold its client could not rely on, counted but not a hold.
    late = history((0, "acquire", TTL, "ok", "lock/a", 0, 4000), *session(1, "lock/b", "2", 0, 4100))
    verdict = mutual_exclusion(late, guarded({"n1": ["2"]}))
    assert verdict["valid"] is True and verdict["stats"]["late_grants"] == 1


def test_adds_that_read_the_list_at_the_same_length_overwrote_each_other():
    h = history(*session(0, "lock/a", "1", 0, 0), *session(1, "lock/b", "2", 0, 200))
    verdict = mutual_exclusion(h, guarded({"n1": ["2"]}))
    kinds = sorted(a["kind"] for a in verdict["anomalies"])
    assert kinds == ["lost-guarded-add", "same-place-adds"]
    lost = next(a for a in verdict["anomalies"] if a["kind"] == "lost-guarded-add")
    assert lost["value"] == "1" and lost["nodes"] == ["n1"]


def test_an_add_that_never_answered_may_be_missing_and_no_final_list_is_unknown():
    h = history((0, "acquire", TTL, "ok", "lock/a", 0, 10), (0, "add", "1", "info", "1", 20, 1020))
    assert mutual_exclusion(h, guarded({"n1": []}))["valid"] is True
    assert mutual_exclusion(history(*session(0, "lock/a", "1", 0, 0)), guarded({}))["valid"] == "unknown"
