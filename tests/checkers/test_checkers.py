"""The election and data-loss checkers on hand-made histories: each anomaly
class is caught, and the legal-but-tricky cases are not flagged."""

from __future__ import annotations

import pytest

from checkers.data_loss import committed_data_loss
from checkers.elections import election_safety, single_leader_per_epoch
from checkers.result import merge, run_checker
from history.errors import Defect
from history.schema import EVENTS_COLUMNS, FINAL_COLUMNS, HISTORY_COLUMNS, frame


def events(*rows):
    return frame([{"source": "log", **r} for r in rows], EVENTS_COLUMNS)


def history(*rows):
    return frame([{"index": i, "time_ns": i, **r} for i, r in enumerate(rows)], HISTORY_COLUMNS)


def final(logs: dict[str, list]):
    return frame(
        [{"node": node, "offset": o, "epoch": 1, "value": v} for node, log in logs.items() for o, v in enumerate(log)],
        FINAL_COLUMNS,
    )


NO_HISTORY = history()
LEADER = '{"op": "leader"}'


def test_double_vote_across_generations_is_caught():
    verdict = election_safety(
        events(
            {"time_ns": 1, "node": "n3", "generation": 1, "event": "vote", "epoch": 2, "candidate": "n1"},
            {"time_ns": 5, "node": "n3", "generation": 2, "event": "vote", "epoch": 2, "candidate": "n2"},
        )
    )
    assert verdict["valid"] is False
    assert verdict["anomalies"][0]["summary"] == "n3 voted for n1 and n2 in epoch 2"


def test_voting_for_others_after_own_candidacy_in_the_same_epoch_is_caught():
    verdict = election_safety(
        events(
            {"time_ns": 1, "node": "n1", "event": "transition", "state": "candidate", "epoch": 4},
            {"time_ns": 2, "node": "n1", "event": "vote", "epoch": 4, "candidate": "n2"},
        )
    )
    assert verdict["valid"] is False


def test_same_vote_repeated_and_votes_in_different_epochs_are_fine():
    verdict = election_safety(
        events(
            {"time_ns": 1, "node": "n3", "event": "vote", "epoch": 2, "candidate": "n1"},
            {"time_ns": 2, "node": "n3", "event": "vote", "epoch": 2, "candidate": "n1"},
            {"time_ns": 3, "node": "n3", "event": "vote", "epoch": 3, "candidate": "n2"},
        )
    )
    assert verdict["valid"] is True


def test_epoch_going_back_is_caught_per_source():
    verdict = election_safety(
        events(
            {"time_ns": 1, "node": "n1", "event": "status", "epoch": 5, "source": "poll"},
            {"time_ns": 2, "node": "n1", "event": "status", "epoch": 4, "source": "poll"},
        ).assign(source="poll")
    )
    assert [a["kind"] for a in verdict["anomalies"]] == ["epoch-went-back"]


def test_two_leaders_in_one_epoch_are_caught_but_a_stale_leader_of_an_older_epoch_is_not():
    stale = events(
        {"time_ns": 1, "node": "n1", "event": "transition", "state": "leader", "epoch": 1},
        {"time_ns": 2, "node": "n2", "event": "transition", "state": "leader", "epoch": 2},
        {"time_ns": 3, "node": "n1", "event": "status", "state": "leader", "epoch": 1, "leader": "n1"},
    )
    assert single_leader_per_epoch(stale, NO_HISTORY)["valid"] is True
    split = events(
        {"time_ns": 1, "node": "n1", "event": "transition", "state": "leader", "epoch": 3},
        {"time_ns": 2, "node": "n4", "event": "status", "state": "follower", "epoch": 3, "leader": "n2"},
    )
    verdict = single_leader_per_epoch(split, NO_HISTORY)
    assert verdict["valid"] is False and verdict["anomalies"][0]["leaders"] == ["n1", "n2"]


def test_a_client_ack_is_a_leadership_claim():
    claims = history(
        {"process": 0, "type": "ok", "f": "append", "node": "n2", "epoch": 1, "offset": 1, "value": "1"},
    )
    leader = events({"time_ns": 1, "node": "n1", "event": "transition", "state": "leader", "epoch": 1})
    assert single_leader_per_epoch(leader, claims)["valid"] is False
    # A target whose followers forward proposals and answer themselves declares that an ok proves nothing.
    assert single_leader_per_epoch(leader, claims, {"ok_proves_leadership": False})["valid"] is True


def test_the_leader_named_in_a_refusal_is_a_claim():
    """n1 acknowledges as leader of epoch 4 while n2 refuses, naming itself leader of epoch 4."""
    replies = history(
        {"process": 0, "type": "invoke", "f": "append", "node": "n1", "value": "1"},
        {"process": 0, "type": "ok", "f": "append", "node": "n1", "epoch": 4, "offset": 1, "value": "1"},
        {"process": 1, "type": "invoke", "f": "append", "node": "n2", "value": "2"},
        {
            "process": 1,
            "type": "fail",
            "f": "append",
            "node": "n2",
            "epoch": 4,
            "leader": "n2",
            "value": "2",
            "error": "not-leader",
        },
    )
    verdict = single_leader_per_epoch(events(), replies)
    assert verdict["valid"] is False and verdict["anomalies"][0]["leaders"] == ["n1", "n2"]
    # The refusal alone, naming the leader n1: one leader, no anomaly.
    agreeing = replies.assign(leader=replies["leader"].where(replies["leader"].isna(), "n1"))
    assert single_leader_per_epoch(events(), agreeing)["valid"] is True


APPENDS = history(
    {"process": 0, "type": "invoke", "f": "append", "value": "1"},
    {"process": 0, "type": "ok", "f": "append", "value": "1", "offset": 1, "epoch": 1},
    {"process": 1, "type": "invoke", "f": "append", "value": "2"},
    {"process": 1, "type": "info", "f": "append", "value": "2", "error": "TimeoutError"},
    {"process": 2, "type": "invoke", "f": "append", "value": "3"},
    {"process": 2, "type": "fail", "f": "append", "value": "3", "error": "not-leader"},
)


def test_all_acked_appends_present_and_info_appends_either_way_is_valid():
    for log in ([LEADER, "1"], [LEADER, "1", "2"]):
        verdict = committed_data_loss(APPENDS, final({"n1": log, "n2": log}), events())
        assert verdict["valid"] is True, verdict


def test_lost_acked_append_is_caught_naming_its_row():
    verdict = committed_data_loss(APPENDS, final({"n1": [LEADER, "1"], "n2": [LEADER, "2"]}), events())
    kinds = {a["kind"] for a in verdict["anomalies"]}
    assert {"lost-acknowledged-append", "divergent-committed-logs"} <= kinds
    lost = next(a for a in verdict["anomalies"] if a["kind"] == "lost-acknowledged-append")
    assert lost["index"] == 1 and lost["nodes"] == ["n2"] and lost["found"] == {"n2": "2"}
    assert "(row 1) is not on n2 (n2 has 2 there)" in lost["summary"]


def test_one_lost_append_is_one_anomaly_naming_every_node():
    verdict = committed_data_loss(APPENDS, final({"n1": [LEADER], "n2": [LEADER], "n3": [LEADER, "1"]}), events())
    [lost] = verdict["anomalies"]
    assert lost["nodes"] == ["n1", "n2"] and lost["found"] == {"n1": None, "n2": None}
    assert verdict["stats"]["lost_appends"] == 1


def test_a_node_read_back_holding_nothing_lacks_every_acknowledged_append():
    """A row with no offset: the node was read and holds nothing (its stream is gone), not that it was never read."""
    gone = frame([{"node": "n1"}, {"node": "n2"}], FINAL_COLUMNS)
    verdict = committed_data_loss(APPENDS, gone, events())
    [lost] = verdict["anomalies"]
    assert verdict["valid"] is False and lost["nodes"] == ["n1", "n2"] and lost["found"] == {"n1": None, "n2": None}
    partly = frame(
        [{"node": "n1", "offset": o, "epoch": 1, "value": v} for o, v in enumerate([LEADER, "1"])] + [{"node": "n2"}],
        FINAL_COLUMNS,
    )
    assert committed_data_loss(APPENDS, partly, events())["anomalies"][0]["nodes"] == ["n2"]
    assert committed_data_loss(APPENDS, gone.iloc[:0], events())["valid"] == "unknown"  # nothing read at all


def test_a_pre_vote_granted_while_following_a_fetched_leader_is_caught():
    verdict = election_safety(
        events(
            {"time_ns": 1, "node": "n2", "event": "prevote", "epoch": 3, "candidate": "n3"},
            {"time_ns": 2, "node": "n1", "event": "prevote", "epoch": 3, "candidate": "n3", "leader": "n2"},
        )
    )
    assert [a["kind"] for a in verdict["anomalies"]] == ["prevote-while-following"]
    assert (
        verdict["anomalies"][0]["summary"]
        == "n1 granted n3 a pre-vote in epoch 3 while following n2, whose log it had fetched"
    )


def test_failed_append_committed_and_duplicates_are_caught():
    log = [LEADER, "1", "3", "1"]
    kinds = {a["kind"] for a in committed_data_loss(APPENDS, final({"n1": log}), events())["anomalies"]}
    assert kinds == {"failed-append-committed", "duplicate-append"}


def test_truncation_below_the_high_watermark_is_caught():
    truncated = events({"time_ns": 9, "node": "n2", "event": "truncate", "epoch": 3, "offset": 4, "hwm": 6})
    verdict = committed_data_loss(APPENDS, final({"n1": [LEADER, "1"]}), truncated)
    assert [a["kind"] for a in verdict["anomalies"]] == ["truncated-committed"]


def test_a_log_cut_back_after_damage_is_named_with_what_it_lost():
    cut = events(
        {"time_ns": 3, "node": "n1", "event": "commit", "epoch": 1, "hwm": 2},
        {"time_ns": 5, "node": "n2", "event": "commit", "epoch": 1, "hwm": 5},
        {"time_ns": 7, "node": "n3", "event": "log-truncated", "epoch": 1, "offset": 3},
        {"time_ns": 8, "node": "n1", "event": "commit", "epoch": 1, "hwm": 9},
        {"time_ns": 9, "node": "n2", "event": "log-truncated", "epoch": 1, "offset": 9},
    )
    verdict = committed_data_loss(APPENDS, final({"n1": [LEADER, "1"]}), cut)
    assert verdict["valid"] is True
    assert [(c["node"], c["kept"], c["committed"]) for c in verdict["stats"]["cut_back"]] == [
        ("n3", 3, 5),
        ("n2", 9, 9),
    ]
    assert verdict["stats"]["cut_back"][0]["summary"].endswith(
        "offsets 3 to 4, committed, gone from it until it caught up"
    )
    assert verdict["stats"]["cut_back"][1]["summary"].endswith("nothing committed was lost")


def test_merge_is_false_over_unknown_over_true():
    ok, bad, unknown = {"valid": True}, {"valid": False}, {"valid": "unknown"}
    assert merge({"a": ok, "b": unknown, "c": bad})["valid"] is False
    assert merge({"a": ok, "b": unknown})["valid"] == "unknown"
    assert merge({"a": ok})["valid"] is True


def test_a_checker_answering_neither_true_false_nor_unknown_is_named_not_folded_into_unknown():
    """A typo in a checker's verdict ("ture") passed as an unseen "unknown"."""

    def typo():
        return {"valid": "ture", "anomalies": []}

    answered = run_checker(typo, "typo")
    assert answered["valid"] == "unknown" and "typo answered valid='ture'" in answered["error"]
    with pytest.raises(Defect, match="'b' answered valid='ture'"):
        merge({"a": {"valid": True}, "b": {"valid": "ture"}})
    with pytest.raises(Defect, match="'b' answered valid=1"):
        merge({"a": {"valid": True}, "b": {"valid": 1}})


def test_no_final_log_means_unknown_not_valid():
    verdict = committed_data_loss(APPENDS, final({}), events())
    assert verdict["valid"] == "unknown" and "final" in verdict["error"]


def test_two_acks_at_one_offset_lose_one_of_them():
    twice = history(
        {"process": 0, "type": "ok", "f": "append", "value": "1", "offset": 1, "epoch": 1},
        {"process": 1, "type": "ok", "f": "append", "value": "2", "offset": 1, "epoch": 2},
    )
    verdict = committed_data_loss(twice, final({"n1": [LEADER, "2"]}), events())
    assert [(a["kind"], a["index"]) for a in verdict["anomalies"]] == [("lost-acknowledged-append", 0)]


def test_an_acked_offset_beyond_a_nodes_log_is_lost_not_a_crash():
    verdict = committed_data_loss(APPENDS, final({"n1": [LEADER]}), events())
    assert [a["kind"] for a in verdict["anomalies"]] == ["lost-acknowledged-append"]
    assert verdict["anomalies"][0]["found"] == {"n1": None}


def keyed_final(lists: dict[str, dict[str, list]]):
    return frame(
        [
            {"node": node, "key": key, "offset": o, "value": v}
            for node, keys in lists.items()
            for key, items in keys.items()
            for o, v in enumerate(items)
        ],
        FINAL_COLUMNS,
    )


KEYED = history(
    {"process": 0, "type": "ok", "f": "append", "key": "a0", "value": "1", "offset": 0},
    {"process": 1, "type": "ok", "f": "append", "key": "a1", "value": "2", "offset": 0},
    {"process": 0, "type": "ok", "f": "append", "key": "a1", "value": "3", "offset": 1},
)


def test_keyed_appends_are_judged_per_list_place_by_place():
    same = {"a0": ["1"], "a1": ["2", "3"]}
    assert committed_data_loss(KEYED, keyed_final({"n1": same, "n2": same}), events())["valid"] is True
    # n2 lost append 3 from the end of a1; the same offset of a0 does not stand in for it.
    verdict = committed_data_loss(KEYED, keyed_final({"n1": same, "n2": {"a0": ["1", "3"], "a1": ["2"]}}), events())
    lost = [a for a in verdict["anomalies"] if a["kind"] == "lost-acknowledged-append"]
    assert [(a["key"], a["value"], a["nodes"]) for a in lost] == [("a1", "3", ["n2"])]
    assert "append 3 to a1 acknowledged at offset 1" in lost[0]["summary"]
    divergent = [a for a in verdict["anomalies"] if a["kind"] == "divergent-committed-logs"]
    assert divergent == [] and verdict["valid"] is False


def test_keyed_lists_that_differ_at_a_place_are_divergent_naming_the_key():
    verdict = committed_data_loss(
        history(), keyed_final({"n1": {"a1": ["2", "3"]}, "n2": {"a1": ["2", "4"]}}), events()
    )
    [divergent] = verdict["anomalies"]
    assert divergent["key"] == "a1" and divergent["offset"] == 1 and divergent["summary"].endswith("offset 1 of a1")


def test_a_leader_without_a_majority_of_votes_is_caught_where_votes_are_logged():
    base = [{"time_ns": 0, "node": n, "event": "start", "epoch": 0} for n in ("n1", "n2", "n3", "n4", "n5")]
    short = events(
        *base,
        {"time_ns": 1, "node": "n2", "event": "vote", "epoch": 3, "candidate": "n1"},
        {"time_ns": 2, "node": "n1", "event": "transition", "state": "leader", "epoch": 3},
    )
    verdict = election_safety(short)
    assert [a["kind"] for a in verdict["anomalies"]] == ["leader-without-majority"]
    enough = events(
        *base,
        {"time_ns": 1, "node": "n2", "event": "vote", "epoch": 3, "candidate": "n1"},
        {"time_ns": 1, "node": "n3", "event": "vote", "epoch": 3, "candidate": "n1"},
        {"time_ns": 2, "node": "n1", "event": "transition", "state": "leader", "epoch": 3},
        {"time_ns": 3, "node": "n4", "event": "transition", "state": "leader", "epoch": 4},
    )
    assert election_safety(enough)["valid"] is True
