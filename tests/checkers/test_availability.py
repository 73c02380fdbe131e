"""The availability figures, on tables made by hand: elections, resignations
and epochs counted from the nodes' logged transitions, the time no node
led, fault windows opened by the nemesis and closed by what undoes them,
and the clients' success and latency inside and outside those windows."""

from __future__ import annotations

import json

import pytest

from checkers.availability import availability, fault_windows
from history.cuts import largest_connected
from history.schema import EVENTS_COLUMNS, HISTORY_COLUMNS, frame

S = 1_000_000_000


def transitions(*rows: tuple[float, str, str, int | None]) -> object:
    return frame(
        [
            {
                "time_ns": int(t * S),
                "node": node,
                "event": "transition",
                "state": state,
                "epoch": epoch,
                "source": "log",
            }
            for t, node, state, epoch in rows
        ],
        EVENTS_COLUMNS,
    )


def history(*rows: dict) -> object:
    return frame(
        [{"index": i, **row} for i, row in enumerate(sorted(rows, key=lambda r: r["time_ns"]))], HISTORY_COLUMNS
    )


def op(t0: float, t1: float, type: str, process: int = 0) -> list[dict]:
    return [
        {"time_ns": int(t0 * S), "process": process, "type": "invoke", "f": "read"},
        {"time_ns": int(t1 * S), "process": process, "type": type, "f": "read"},
    ]


def fault(t0: float, f: str, nodes: list[str]) -> list[dict]:
    return [
        {"time_ns": int(t0 * S) - 1000, "process": -1, "type": "invoke", "f": f},
        {"time_ns": int(t0 * S), "process": -1, "type": "ok", "f": f, "node": json.dumps(nodes)},
    ]


def test_elections_resignations_and_time_without_a_leader():
    events = transitions(
        (1, "n1", "leader", 1), (5, "n1", "resigned", 1), (6, "n2", "candidate", 2), (7, "n2", "leader", 2)
    )
    found = availability(history(*op(0, 10, "ok")), events)["stats"]
    assert (found["leader_elections"], found["resignations"], found["epochs"]) == (2, 1, 2)
    assert found["leaderless_ms"] == pytest.approx(1000 + 2000)  # before n1 led, and from its resignation to n2


def test_a_window_lasts_from_a_fault_to_what_undoes_it_and_clients_are_counted_inside_and_out():
    rows = [*fault(2, "kill", ["n1"]), *fault(4, "start", ["n1"]), *fault(6, "pause", ["n2"])]
    rows += op(1, 1.1, "ok", 0) + op(2.5, 3.5, "info", 1) + op(3, 3.2, "ok", 2) + op(5, 5.01, "ok", 3)
    table = history(*rows)
    windows = fault_windows(table)
    assert list(zip(windows["f"], windows["start_ns"] // S, windows["end_ns"] // S)) == [
        ("kill", 2, 4),
        ("pause", 6, 6),
    ]
    clients = availability(table, transitions((0, "n1", "leader", 1)))["stats"]["clients"]
    assert clients["quiet"]["operations"] == 2 and clients["quiet"]["ok_rate"] == 1.0
    assert clients["kill"]["operations"] == 2 and clients["kill"]["ok_rate"] == 0.5
    assert clients["kill"]["latency_p50_ms"] == pytest.approx(200)  # only what was acknowledged


def test_no_transition_logged_is_a_run_without_a_leader():
    found = availability(history(*op(0, 3, "fail")), transitions())["stats"]
    assert found["leader_elections"] == 0 and found["leaderless_ms"] == pytest.approx(3000)


def followers(t: float, *nodes: str) -> list[tuple[float, str, str, int]]:
    return [(t, node, "follower", 1) for node in nodes]


def stuck(rows: list[dict], *changes: tuple[float, str, str, int]) -> dict:
    found = availability(history(*op(0, 20, "ok"), *rows), transitions(*changes))["stats"]
    return {"ms": found["stuck_ms"], "spans": [(span["ms"], span["nodes"]) for span in found["stuck"]]}


def test_a_majority_up_and_heard_with_no_leader_among_them_is_stuck():
    # n1 resigns at 5 s with nothing touched and no one stands until 9 s: stuck 4 s, all three up.
    found = stuck(
        [], (0, "n1", "leader", 1), *followers(0, "n2", "n3"), (5, "n1", "resigned", 1), (9, "n2", "leader", 2)
    )
    assert found == {"ms": 4000.0, "spans": [(4000.0, ["n1", "n2", "n3"])]}


def test_a_leader_taken_down_leaves_the_others_stuck_only_until_they_elect():
    # n1 (leading) paused at 5 s: n2 and n3 are up and leaderless until n2 leads at 5.6 s;
    # n1's own last word (leader) does not count while it is paused, nor after until RECOVERY_NS.
    found = stuck(
        [*fault(5, "pause", ["n1"]), *fault(8, "resume", ["n1"])],
        (0, "n1", "leader", 1),
        *followers(0, "n2", "n3"),
        (5.6, "n2", "leader", 2),
        (8.1, "n1", "follower", 2),
    )
    assert found["ms"] == pytest.approx(600.0, abs=1) and found["spans"][0][1] == ["n2", "n3"]


def test_no_majority_up_and_heard_is_never_stuck_and_a_node_counts_again_a_while_after_its_fault():
    # n2 and n3 paused 2 s to 6 s, n1 resigned at 3 s: a minority is up, not stuck; from 7 s
    # (RECOVERY_NS after the resume) all three are up again and nobody leads until 10 s.
    found = stuck(
        [*fault(2, "pause", ["n2", "n3"]), *fault(6, "resume", ["n2", "n3"])],
        (0, "n1", "leader", 1),
        *followers(0, "n2", "n3"),
        (3, "n1", "resigned", 1),
        (10, "n3", "leader", 2),
    )
    assert found["ms"] == pytest.approx(3000.0, abs=1) and found["spans"][0][1] == ["n1", "n2", "n3"]


def test_a_partition_touches_the_ends_of_the_links_it_cuts():
    # n3 cut off from 2 s to 12 s; n1 resigns at 4 s: n1 and n2 are a majority up and heard, stuck until 7 s.
    cut = [["n1", "n3"], ["n3", "n1"], ["n2", "n3"], ["n3", "n2"]]
    found = stuck(
        [*fault(2, "partition", cut), *fault(12, "heal", [])],
        (0, "n1", "leader", 1),
        *followers(0, "n2", "n3"),
        (4, "n1", "resigned", 1),
        (7, "n2", "leader", 2),
    )
    assert found["spans"] == [(3000.0, ["n1", "n2"])]


def test_a_leader_that_piled_cuts_leave_unheard_no_longer_counts_as_leading():
    # n3 deaf to n1 from 2 s, n1 deaf to n2 from 2.5 s: each cut alone leaves n1 a follower it
    # hears both ways, together none, so from 2.5 s n2 and n3 are up, heard and leaderless until
    # n2 leads at 4 s, though n1 still says it leads.
    found = stuck(
        [*fault(2, "partition", [["n1", "n3"]]), *fault(2.5, "partition", [["n2", "n1"]]), *fault(9, "heal", [])],
        (0, "n1", "leader", 1),
        *followers(0, "n2", "n3"),
        (4, "n2", "leader", 2),
    )
    assert found["spans"] == [(1500.0, ["n2", "n3"])]


def test_a_run_whose_voters_changed_has_no_stuck_figure():
    found = stuck([*fault(2, "add-voter", ["n4"])], (0, "n1", "leader", 1), (5, "n1", "resigned", 1))
    assert found == {"ms": None, "spans": []}


def test_a_leader_whose_clock_is_moved_still_leads():
    # n1 leads throughout with its clock moved from 2 s to 9 s: n2 and n3 are the majority up and
    # heard, and the cluster has a leader all along.
    found = stuck(
        [*fault(2, "clock", ["n1"]), *fault(9, "clock-reset", ["n1"])],
        (0, "n1", "leader", 1),
        *followers(0, "n2", "n3"),
    )
    assert found == {"ms": 0.0, "spans": []}


def test_a_majority_split_by_a_cut_among_them_is_not_stuck():
    # n3 paused; n1 (the leader) and n2 cut from each other (an orphaned follower): each of them is
    # heard by a majority, yet no two of the three hear each other and are up: Raft need not elect.
    cut = [["n1", "n2"], ["n2", "n1"]]
    found = stuck(
        [*fault(2, "partition", cut), *fault(2.5, "pause", ["n3"]), *fault(12, "heal-all", [])],
        (0, "n1", "leader", 1),
        *followers(0, "n2", "n3"),
        (4, "n1", "resigned", 1),
        (13, "n2", "leader", 2),
    )
    assert found == {"ms": 0.0, "spans": []}
    assert largest_connected(["n1", "n2", "n3", "n4"], [("n1", "n2"), ("n3", "n2")]) == ["n1", "n3", "n4"]
    assert largest_connected(["n1", "n2"], [("n2", "n1")]) == ["n1"]


def test_a_node_whose_files_were_damaged_never_again_makes_a_stuck_majority():
    # n3's log damaged at 2 s (it may withhold its vote until a leader catches it up), then n1,
    # the leader, killed from 5 s to 10 s: n2 and n3 are up but n3 does not count, so n2 alone
    # is no majority and the cluster is not stuck; a fault that damages nothing leaves it stuck
    # while n1 is down.
    rows = [*fault(5, "kill", ["n1"]), *fault(10, "start", ["n1"])]
    changes = ((0, "n1", "leader", 1), *followers(0, "n2", "n3"), (11.5, "n2", "leader", 2))
    assert stuck([*fault(2, "corrupt", ["n3"]), *rows], *changes) == {"ms": 0.0, "spans": []}
    assert stuck([*fault(2, "bounce", ["n3"]), *rows], *changes)["spans"] == [(5000.0, ["n2", "n3"])]
