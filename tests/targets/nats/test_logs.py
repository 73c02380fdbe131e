"""The NATS log parser against real nats-server 2.9.10 debug lines (three
nodes' logs of one local run under kill, pause, partition and bounce, cut to
the workload stream's Raft group and the metadata group, each message kept
at most twice): candidacies with their terms, votes joined to the requests
they answer, leaders, step-downs (a flood of them logged at once counts
once), and the metadata group left out."""

from __future__ import annotations

from pathlib import Path

from targets.nats import logs
from targets.nats.peers import peer_id

FIXTURES = Path(__file__).parent / "fixtures"


def parsed(node: str) -> list[tuple]:
    rows = logs.events(FIXTURES / f"{node}.log", node, lambda t: t)
    return [(r["event"], r.get("state"), r["epoch"], r.get("leader") or r.get("candidate")) for r in rows]


def test_peer_ids_are_the_servers_names_hashed_as_nats_logs_them():
    assert [peer_id(n) for n in ("n1", "n2", "n3")] == ["fjFyEjc1", "44jzkV9D", "BXScrY9i"]


def test_a_leaders_log_gives_its_elections_step_downs_and_votes():
    assert parsed("n1") == [
        ("transition", "candidate", 1, None),
        ("transition", "leader", 1, "n1"),
        ("transition", "follower", None, None),
        ("vote", None, 3, "n2"),
        ("leader", None, None, "n2"),
        ("vote", None, 4, "n3"),
        ("leader", None, None, "n3"),
        ("transition", "candidate", 5, None),
        ("transition", "leader", 5, "n1"),
    ]


def test_a_restarted_candidate_that_steps_down_at_once_is_one_step_down():
    rows = parsed("n3")
    assert rows[:4] == [
        ("vote", None, 1, "n1"),
        ("leader", None, None, "n1"),
        ("transition", "candidate", 2, None),
        ("transition", "follower", None, None),
    ]
    assert ("transition", "leader", 4, "n3") in rows
    assert (FIXTURES / "n3.log").read_text().count("Switching to follower") == 2


def test_only_the_workload_streams_group_is_read():
    text = (FIXTURES / "n2.log").read_text()
    assert "_meta_" in text
    assert logs.workload_groups(text) == {"S-R3F-QMaYqR2N"}
    assert all(row["directory_id"] == peer_id("n2") for row in logs.events(FIXTURES / "n2.log", "n2", lambda t: t))
