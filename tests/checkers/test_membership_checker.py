"""The `membership` checker on small hand-made tables: each rule passes what
a correct node logs and names what a broken one logs."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from checkers.membership import membership
from history.schema import EVENTS_COLUMNS, FINAL_COLUMNS, HISTORY_COLUMNS, frame

OLD, NEW = "a" * 32, "b" * 32


def events(*rows: dict):
    return frame([{"source": "log", "generation": 1, **row} for row in rows], EVENTS_COLUMNS)


def voters(time_ns, node, offset, hwm):
    return {"time_ns": time_ns, "node": node, "event": "voters", "offset": offset, "hwm": hwm, "voters": "[]"}


def check(event_rows=(), history_rows=(), final_rows=()):
    return membership(
        frame(list(history_rows), HISTORY_COLUMNS), events(*event_rows), frame(list(final_rows), FINAL_COLUMNS)
    )


def kinds(verdict):
    return [a["kind"] for a in verdict["anomalies"]]


def test_a_change_after_the_previous_one_committed_passes():
    verdict = check([voters(1, "n1", 0, 0), voters(2, "n1", 10, 10), voters(3, "n1", 12, 11)])
    assert verdict["valid"] is True and verdict["stats"]["voter_sets"] == 3


def test_a_change_while_the_previous_one_is_uncommitted_is_named():
    verdict = check([voters(1, "n1", 0, 0), voters(2, "n1", 10, 10), voters(3, "n1", 11, 10)])
    assert kinds(verdict) == ["two-uncommitted-voter-changes"]
    assert verdict["anomalies"][0]["offset"] == 11 and verdict["anomalies"][0]["previous_offset"] == 10


def test_a_truncation_back_to_an_older_set_and_a_new_life_are_not_overlaps():
    rows = [voters(1, "n2", 10, 5), voters(2, "n2", 4, 5), voters(3, "n2", 12, 11)]
    restarted = {**voters(4, "n2", 12, 0), "generation": 2}
    assert check([*rows, restarted])["valid"] is True


def test_a_follower_catching_up_before_it_knows_the_high_watermark_is_not_an_overlap():
    received = [{**voters(1, "n1", 0, 0), "state": "observer"}, {**voters(2, "n1", 168, 0), "state": "follower"}]
    assert check(received)["valid"] is True
    taken = [{**voters(1, "n1", 0, 0), "state": "leader"}, {**voters(2, "n1", 168, 0), "state": "leader"}]
    assert kinds(check(taken)) == ["two-uncommitted-voter-changes"]


def answered(offset, hwm, ack):
    return {
        "time_ns": 5,
        "node": "n1",
        "event": "voter-change-answered",
        "offset": offset,
        "hwm": hwm,
        "ack_when_committed": ack,
    }


def test_ack_when_committed_answers_need_the_commit():
    assert check([answered(10, 11, True), answered(12, 12, False)])["valid"] is True
    assert kinds(check([answered(10, 10, True)])) == ["voter-change-acknowledged-before-commit"]


def vote(event, directory, as_directory):
    return {
        "time_ns": 7,
        "node": "n2",
        "event": event,
        "epoch": 3,
        "candidate": "n3",
        "directory_id": directory,
        "as_directory": as_directory,
    }


def test_a_vote_under_the_old_identity_is_named():
    assert check([vote("vote", NEW, NEW), vote("prevote", NEW, None)])["valid"] is True
    assert kinds(check([vote("prevote", NEW, OLD)])) == ["vote-under-old-identity"]


def change_rows(offset):
    value = json.dumps({"node": "n4", "directory_id": NEW, "ack_when_committed": True})
    return [
        {"index": 0, "time_ns": 1, "process": -1, "type": "invoke", "f": "add-voter", "value": value},
        {"index": 1, "time_ns": 2, "process": -1, "type": "ok", "f": "add-voter", "value": value, "offset": offset},
    ]


def record(node, offset, change):
    return {"node": node, "offset": offset, "epoch": 2, "value": {"op": "voters", "voters": [], "change": change}}


def test_an_acknowledged_voter_change_must_be_in_every_committed_log():
    kept = [record("n1", 7, ["add", "n4", NEW]), record("n2", 7, ["add", "n4", NEW])]
    assert check(history_rows=change_rows(7), final_rows=kept)["valid"] is True
    lost = [record("n1", 7, ["add", "n4", NEW]), record("n2", 7, ["remove", "n3", OLD])]
    verdict = check(history_rows=change_rows(7), final_rows=lost)
    assert kinds(verdict) == ["lost-voter-change"] and verdict["anomalies"][0]["node"] == "n2"


def test_a_candidacy_under_the_old_identity_is_a_vote_under_it():
    named = json.dumps([["n1", OLD], ["n2", NEW]])
    own_set = {"time_ns": 1, "node": "n2", "event": "voters", "offset": 0, "hwm": 0, "voters": named}
    stands = {"time_ns": 2, "node": "n2", "event": "transition", "state": "candidate", "epoch": 2}
    assert check([own_set, {**stands, "directory_id": NEW}])["valid"] is True
    verdict = check([own_set, {**stands, "directory_id": OLD}])
    assert kinds(verdict) == ["vote-under-old-identity"] and "voted for itself" in verdict["anomalies"][0]["summary"]


def overlaps_row_by_row(rows: list[dict]) -> list[tuple]:
    """The rule as docs/organisation.md states it, one life (node, generation) at a time in time order."""
    found, last = [], {}
    for row in sorted(rows, key=lambda r: r["time_ns"]):
        life = (row["node"], row["generation"])
        before = last.get(life)
        if (
            before is not None
            and row.get("state", "leader") == "leader"
            and before < row["offset"]
            and row["hwm"] <= before
        ):
            found.append((row["node"], row["time_ns"], row["offset"], before))
        last[life] = row["offset"]
    return sorted(found)


VOTER_ROWS = st.lists(
    st.fixed_dictionaries(
        {
            "node": st.sampled_from(["n1", "n2"]),
            "generation": st.integers(1, 2),
            "offset": st.integers(0, 6),
            "hwm": st.integers(0, 6),
            "state": st.sampled_from(["leader", "follower"]),
        }
    ),
    max_size=14,
)


@given(VOTER_ROWS)
def test_overlapping_changes_are_those_a_row_by_row_reading_finds(rows):
    rows = [{**voters(t, r["node"], r["offset"], r["hwm"]), **r} for t, r in enumerate(rows)]
    anomalies = check(rows)["anomalies"]
    found = [(a["node"], a["time_ns"], a["offset"], a["previous_offset"]) for a in anomalies]
    assert sorted(found) == overlaps_row_by_row(rows)[:20]
