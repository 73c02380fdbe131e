"""Coverage cells: each fault in the history becomes (fault, role of what it
hit, what else was going on), from the nodes' own states at its moment."""

from __future__ import annotations

import json

from checkers.coverage import add_up, coverage
from history.schema import EVENTS_COLUMNS, HISTORY_COLUMNS, frame

MS = 1_000_000


def nemesis(rows):
    out = []
    for index, (t, f, touched) in enumerate(rows):
        for kind in ("invoke", "ok"):
            out.append(
                {
                    "index": 2 * index + (kind == "ok"),
                    "time_ns": t * MS + (kind == "ok"),
                    "process": -1,
                    "type": kind,
                    "f": f,
                    "node": None if kind == "invoke" else json.dumps(touched),
                }
            )
    return frame(out, HISTORY_COLUMNS)


def states(*rows):
    return frame([{"time_ns": t * MS, "node": n, "event": "status", "state": s} for t, n, s in rows], EVENTS_COLUMNS)


def test_each_fault_gets_the_role_it_hit_and_what_else_was_in_force():
    events = states((0, "n1", "leader"), (0, "n2", "follower"), (0, "n3", "follower"), (50, "n2", "candidate"))
    cut_leader_off = [["n1", "n2"], ["n2", "n1"], ["n1", "n3"], ["n3", "n1"]]
    history = nemesis(
        [
            (10, "pause", ["n1"]),
            (20, "resume", ["n1"]),
            (30, "kill", ["n2"]),
            (40, "partition", cut_leader_off),
            (60, "bounce", ["n3"]),
            (70, "heal-all", []),
        ]
    )
    found = coverage(history, events)
    assert found["cells"] == [
        {"fault": "bounce", "role": "follower", "with": "kill+partition+election", "count": 1},
        {"fault": "kill", "role": "follower", "with": "alone", "count": 1},
        {"fault": "partition", "role": "leader-cut-off", "with": "kill", "count": 1},
        {"fault": "pause", "role": "leader", "with": "alone", "count": 1},
    ]
    assert found["hit"] == 4 and found["faults"] == 4


def test_a_partition_that_keeps_the_leader_with_a_majority_cuts_followers_off():
    events = states((0, "n1", "leader"), (0, "n2", "follower"), (0, "n3", "follower"))
    history = nemesis([(10, "partition", [["n3", "n1"], ["n1", "n3"], ["n3", "n2"], ["n2", "n3"]])])
    assert coverage(history, events)["cells"][0]["role"] == "followers-cut-off"


def test_one_way_and_partial_partitions_are_named_for_what_they_leave():
    events = states(*[(0, n, "leader" if n == "n1" else "follower") for n in ("n1", "n2", "n3", "n4", "n5")])
    muted = [["n1", n] for n in ("n2", "n3", "n4", "n5")]  # nobody hears the leader; it hears everyone
    deaf = [[n, "n1"] for n in ("n2", "n3", "n4", "n5")]
    orphaned = [["n1", "n2"], ["n2", "n1"]]  # n2 still reaches n3, n4 and n5
    unanswered = [["n1", "n2"]]  # n2's fetches reach the leader; its answers are lost
    unheard = [["n2", "n1"]]  # the leader still reaches n2, which it no longer hears
    between = [["n2", "n3"], ["n3", "n2"]]  # the leader reaches and hears everyone
    history = nemesis(
        [
            (10, "partition", muted),
            (20, "partition", deaf),
            (30, "partition", orphaned),
            (40, "partition", unanswered),
            (50, "partition", between),
            (60, "partition", unheard),
        ]
    )
    roles = [c["role"] for c in coverage(history, events)["cells"]]
    assert roles == [
        "follower-deaf",
        "follower-orphaned",
        "followers-cut-off",
        "leader-cut-off",
        "leader-deaf",
        "leader-mute",
    ]


def test_cells_of_many_runs_add_up():
    one = [{"fault": "kill", "role": "leader", "with": "alone", "count": 2}]
    other = [
        {"fault": "kill", "role": "leader", "with": "alone", "count": 1},
        {"fault": "pause", "role": "other", "with": "election", "count": 1},
    ]
    assert add_up([one, other]) == [
        {"fault": "kill", "role": "leader", "with": "alone", "count": 3},
        {"fault": "pause", "role": "other", "with": "election", "count": 1},
    ]


def test_a_fault_that_touched_nothing_is_no_cell():
    """A "partition" of one node cuts no link (`[]`): it was counted as a cell."""
    from checkers.coverage import coverage
    from history.schema import EVENTS_COLUMNS, HISTORY_COLUMNS, frame

    rows = [
        {"index": 0, "time_ns": 10, "process": -1, "type": "invoke", "f": "partition"},
        {"index": 1, "time_ns": 20, "process": -1, "type": "ok", "f": "partition", "node": []},
        {"index": 2, "time_ns": 30, "process": -1, "type": "invoke", "f": "kill"},
        {"index": 3, "time_ns": 40, "process": -1, "type": "ok", "f": "kill", "node": ["n1"]},
    ]
    events = [{"time_ns": 0, "node": "n1", "event": "status", "state": "leader", "source": "status"}]
    found = coverage(frame(rows, HISTORY_COLUMNS), frame(events, EVENTS_COLUMNS))
    assert found["faults"] == 1 and [c["fault"] for c in found["cells"]] == ["kill"]
