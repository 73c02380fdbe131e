"""etcd's zap JSON log lines, captured from a real 3.4.23 cluster on
127.0.0.1 (n1 SIGKILLed while leading), as events rows."""

from __future__ import annotations

from pathlib import Path

from targets.etcd import logs

FIXTURE = Path(__file__).parents[2] / "data" / "etcd" / "n2-leader-killed.log"


def test_member_ids_are_named_from_the_log_itself():
    names = logs.member_names(logs.read_records(FIXTURE))
    assert sorted(names.values()) == ["n1", "n2", "n3"]
    assert names["5485ed9a2f08260c"] == "n1"


def test_transitions_votes_prevotes_and_leaders():
    rows = logs.events(FIXTURE, "n2", lambda wall_ns: wall_ns)
    kinds = [
        (r["event"], r.get("state"), r.get("epoch"), r.get("candidate"), r.get("leader"))
        for r in rows
        if r["event"] != "configuration"
    ]
    # Pre-votes are at the voter's term (one below the proposed one); votes at the election's term.
    assert ("prevote", None, 1, "n1", None) in kinds and ("vote", None, 2, "n1", None) in kinds
    assert ("leader", None, 2, None, "n1") in kinds
    # n1 was killed: n3 won term 3 with n2's vote.
    assert ("vote", None, 3, "n3", None) in kinds and ("leader", None, 3, None, "n3") in kinds
    assert [r["epoch"] for r in rows if r["event"] == "transition"] == sorted(
        r["epoch"] for r in rows if r["event"] == "transition"
    )
    configuration = [r for r in rows if r["event"] == "configuration"][-1]
    assert configuration["voters"] == '[["n1", null], ["n2", null], ["n3", null]]'
    assert all(r["time_ns"] % 1_000_000 == 0 and r["node"] == "n2" for r in rows)


def test_lines_that_are_not_json_are_skipped(tmp_path):
    log = tmp_path / "node.log"
    log.write_text("2026-11-23 18:40:04.163 W | etcdmain: data dir permissions\n" + FIXTURE.read_text())
    assert logs.events(log, "n2", lambda t: t) == logs.events(FIXTURE, "n2", lambda t: t)


MEMBERS = Path(__file__).parents[2] / "data" / "etcd"


def test_a_member_added_back_is_a_new_life_and_learners_are_read():
    """Real lines of a run under `--nemesis membership`: n3 was removed and
    added back as a learner twice, so its log holds three members' lines."""
    rows = logs.events(MEMBERS / "n3-members-changed.log", "n3", lambda t: t)
    lives = list(dict.fromkeys(r["directory_id"] for r in rows))
    assert len(lives) == 3
    # Each life starts its terms again: within one, they never go back.
    for life in lives:
        terms = [r["epoch"] for r in rows if r["directory_id"] == life and r["event"] == "transition"]
        assert terms == sorted(terms)
    seen = logs.events(MEMBERS / "n1-members-changed.log", "n1", lambda t: t)
    learners = [r for r in seen if r["event"] == "learners"]
    assert learners and all(r["voters"].startswith('[["n') for r in learners), learners[:2]
    assert len({r["directory_id"] for r in seen}) == 2  # n1 was removed and added back once
