"""The abstract state (checkers/abstract_state.py) from hand-made
observations: the same for any naming of the nodes, gaps bucketed, a node
held down named by its fault, roles read from the leader where a status
names no state, and a run's states and moves from its tables."""

from __future__ import annotations

from unittest.mock import patch

import pandas as pd
from hypothesis import example, given, settings
from hypothesis import strategies as st

from checkers.abstract_state import FIELDS, _faults_in_force, state_coverage, states_reached, transitions
from history.observation import NEAR_ENTRIES, abstract
from history.schema import EVENTS_COLUMNS, frame

from .test_coverage import MS, nemesis


def row(state: str | None, epoch: int | None = 3, offset: int | None = 100, hwm: int | None = 100, leader=None, **more):
    """A status row; what it fsynced is its whole log unless `synced` says otherwise."""
    return {"state": state, "epoch": epoch, "offset": offset, "synced": offset, "hwm": hwm, "leader": leader, **more}


def test_a_state_is_each_nodes_role_and_gaps_and_the_faults_in_force():
    rows = {
        "n1": row("leader", offset=500, hwm=100),
        "n2": row("follower", epoch=2, offset=100),
        "n3": row("candidate", epoch=1, offset=500 - NEAR_ENTRIES, hwm=500 - NEAR_ENTRIES),
    }
    # n1: newest epoch, longest log, 400 uncommitted; n2: an epoch behind, 400 behind;
    # n3: two epochs behind (or more), level within NEAR_ENTRIES.
    assert (
        abstract(rows, ["partition", "clock", "partition"])
        == "candidate:2000 follower:1+00 leader:00+0 | clock,partition"
    )
    assert abstract(rows).endswith("| -")


def test_a_node_held_down_is_named_by_its_fault_and_an_unknown_gap_is_a_question_mark():
    rows = {"n1": row("leader", offset=None, hwm=None), "n2": row("follower", epoch=None)}
    assert abstract(rows, ["kill"], {"n3": "kill"}) == "follower:?000 kill leader:0??? | kill"


def test_without_a_state_the_role_is_what_the_node_says_of_the_leader():
    rows = {"a": row(None, leader="a"), "b": row(None, leader="a"), "c": row(None)}
    assert abstract(rows) == "follower:0000 leader:0000 other:0000 | -"


def test_fsync_lag_is_what_a_power_loss_would_take_and_unknown_where_no_status_says_it():
    rows = {
        "n1": row("leader", offset=500, hwm=500, synced=500),
        "n2": row("follower", offset=500, hwm=500, synced=500 - NEAR_ENTRIES - 1),  # fsyncs on a timer
        "n3": row("follower", offset=500, hwm=500, synced=None),  # says nothing of its disk (etcd)
    }
    assert abstract(rows) == "follower:000+ follower:000? leader:0000 | -"
    rows["n2"]["synced"] = 500 - NEAR_ENTRIES  # within the noise of two polls a moment apart
    assert abstract(rows) == "follower:0000 follower:000? leader:0000 | -"


@given(st.permutations(["n1", "n2", "n3", "n4"]))
def test_names_do_not_matter(names):
    roles = [row("leader", offset=900), row("follower", epoch=2), row("follower"), row("candidate", epoch=4)]
    renamed = dict(zip(names, roles))
    assert abstract(renamed, ["pause"], {names[0]: "pause"}) == abstract(
        dict(zip(["n1", "n2", "n3", "n4"], roles)), ["pause"], {"n1": "pause"}
    )


def polls(*rows):
    return frame(
        [
            {
                "time_ns": t * MS,
                "node": n,
                "event": "status",
                "source": "poll",
                "state": s,
                "epoch": e,
                "offset": 10,
                "synced": 10,
                "hwm": 10,
            }
            for t, n, s, e in rows
        ],
        EVENTS_COLUMNS,
    )


def test_a_runs_states_and_moves_come_from_what_the_nodes_said_and_its_faults():
    events = polls(
        (0, "n1", "leader", 1),
        (0, "n2", "follower", 1),
        (20, "n2", "candidate", 2),
        (40, "n2", "leader", 2),
        (60, "n1", "follower", 2),
    )
    history = nemesis([(10, "kill", ["n1"]), (50, "start", ["n1"])])
    reached = states_reached(history, events)
    assert reached == [
        "leader:0000 | -",
        "follower:0000 leader:0000 | -",
        "candidate:0000 kill | kill",
        "kill leader:0000 | kill",
        "follower:0000 leader:0000 | -",
    ]
    assert len(transitions(reached)) == 4
    covered = state_coverage(history, events)
    assert covered["states"]["follower:0000 leader:0000 | -"] == 2 and len(covered["transitions"]) == 4


def states_reached_row_by_row(history, events) -> list[str]:
    """The definition, row by row: each node's latest status (what it said
    of each field, the last time it said it) and the faults in force at
    each events row, made abstract; a state kept where it changed. The
    checker computes the same while calling `abstract` only where what
    decides the state changed."""
    said = events.loc[events["node"].notna()].sort_values("time_ns", kind="stable")
    faults = _faults_in_force(history, said["time_ns"].to_numpy(dtype="int64"))
    latest: dict[str, dict] = {}
    reached: list[str] = []
    for at, (_, event) in enumerate(said.iterrows()):
        known = latest.setdefault(str(event["node"]), dict.fromkeys(FIELDS))
        known.update({name: event[name] for name in FIELDS if not pd.isna(event[name])})
        in_force, gone = faults[at]
        state = abstract({n: r for n, r in latest.items() if n not in gone}, in_force, gone)
        if not reached or reached[-1] != state:
            reached.append(state)
    return reached


MAYBE = lambda values: st.one_of(st.none(), values)  # noqa: E731
STATUS = st.tuples(
    st.integers(0, 100),
    st.sampled_from(["n1", "n2", "n3"]),
    MAYBE(st.sampled_from(["leader", "follower", "candidate", "prospective"])),
    MAYBE(st.integers(1, 4)),
    MAYBE(st.integers(0, 120)),
    MAYBE(st.integers(0, 120)),
    MAYBE(st.sampled_from(["n1", "n2", "n3"])),
    MAYBE(st.integers(0, 120)),
)
FAULT = st.tuples(st.integers(0, 100), st.sampled_from(["kill", "start", "partition", "heal", "pause", "resume"]),
                  st.lists(st.sampled_from(["n1", "n2", "n3"]), min_size=1, max_size=2, unique=True))  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(st.lists(STATUS, max_size=40), st.lists(FAULT, max_size=6))
# n1 heard of only by a poll that said nothing, a chunk (of 3 rows) before it is judged again.
@example(
    [(0, "n1", None, None, None, None, None, None), *((t, "n2", "leader", 1, t, t, "n2", t) for t in (1, 2, 3))], []
)
def test_the_states_reached_are_those_of_each_row_made_abstract(statuses, faults):
    names = ("time_ns", "node", "state", "epoch", "offset", "hwm", "leader", "synced")
    events = frame(
        [{**dict(zip(names, s)), "time_ns": s[0] * MS, "event": "status", "source": "poll"} for s in statuses],
        EVENTS_COLUMNS,
    )
    history = nemesis(sorted(faults, key=lambda fault: fault[0]))
    expected = states_reached_row_by_row(history, events)
    assert states_reached(history, events) == expected
    # A run's events judged a few rows at a time (as a long run's are) reach the same states.
    with patch("checkers.abstract_state.CHUNK_ROWS", 3):
        assert states_reached(history, events) == expected
