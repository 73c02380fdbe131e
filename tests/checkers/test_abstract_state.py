"""The abstract state (checkers/abstract_state.py) from hand-made
observations: the same for any naming of the nodes, gaps bucketed, a node
held down named by its fault, roles read from the leader where a status
names no state, and a run's states and moves from its tables."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from checkers.abstract_state import NEAR_ENTRIES, abstract, state_coverage, states_reached, transitions
from checkers.schema import EVENTS_COLUMNS, frame

from .test_coverage import MS, nemesis


def row(state: str | None, epoch: int | None = 3, offset: int | None = 100, hwm: int | None = 100, leader=None):
    return {"state": state, "epoch": epoch, "offset": offset, "hwm": hwm, "leader": leader}


def test_a_state_is_each_nodes_role_and_gaps_and_the_faults_in_force():
    rows = {
        "n1": row("leader", offset=500, hwm=100),
        "n2": row("follower", epoch=2, offset=100),
        "n3": row("candidate", epoch=1, offset=500 - NEAR_ENTRIES, hwm=500 - NEAR_ENTRIES),
    }
    # n1: newest epoch, longest log, 400 uncommitted; n2: an epoch behind, 400 behind;
    # n3: two epochs behind (or more), level within NEAR_ENTRIES.
    assert (
        abstract(rows, ["partition", "clock", "partition"]) == "candidate:200 follower:1+0 leader:00+ | clock,partition"
    )
    assert abstract(rows).endswith("| -")


def test_a_node_held_down_is_named_by_its_fault_and_an_unknown_gap_is_a_question_mark():
    rows = {"n1": row("leader", offset=None, hwm=None), "n2": row("follower", epoch=None)}
    assert abstract(rows, ["kill"], {"n3": "kill"}) == "follower:?00 kill leader:0?? | kill"


def test_without_a_state_the_role_is_what_the_node_says_of_the_leader():
    rows = {"a": row(None, leader="a"), "b": row(None, leader="a"), "c": row(None)}
    assert abstract(rows) == "follower:000 leader:000 other:000 | -"


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
        "leader:000 | -",
        "follower:000 leader:000 | -",
        "candidate:000 kill | kill",
        "kill leader:000 | kill",
        "follower:000 leader:000 | -",
    ]
    assert len(transitions(reached)) == 4
    covered = state_coverage(history, events)
    assert covered["states"]["follower:000 leader:000 | -"] == 2 and len(covered["transitions"]) == 4
