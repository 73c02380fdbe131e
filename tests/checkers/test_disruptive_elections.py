"""`disruptive_elections` as KIP-996 means them: an election that unseats a
leader alive and heard by a majority at that moment. A leader the nemesis
took down (killed, paused, bounced, powered off) or cut off is no such
leader, however recently it answered a status poll."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from checkers.availability import availability
from history.schema import EVENTS_COLUMNS, HISTORY_COLUMNS, frame

S = 1_000_000_000
NODES = ("n1", "n2", "n3")


def nemesis(time_ns: int, f: str, node, index: int, took_ns: int = 1000) -> list[dict]:
    return [
        {"index": index, "time_ns": time_ns - took_ns, "process": -1, "type": "invoke", "f": f},
        {"index": index + 1, "time_ns": time_ns, "process": -1, "type": "ok", "f": f, "node": node},
    ]


def run(faults: list[tuple], candidacy_s: float = 2.5, later: list[dict] = ()):
    """n1 leads epoch 1 from 0.1 s; `faults` (second, f, node column) are
    confirmed (a fourth item: the seconds it took from its invocation); n2
    stands for epoch 2 at `candidacy_s`, and n1 steps down to it 10 ms later;
    `later`: more transitions. Every node answers status polls every 0.2 s
    until 2.4 s (a killed leader's last answer is recent)."""
    rows = [
        {"index": 0, "time_ns": 0, "process": 0, "type": "invoke", "f": "append", "value": "1"},
        {"index": 1, "time_ns": 3 * S, "process": 0, "type": "ok", "f": "append", "value": "1"},
    ]
    for number, (second, f, node, *took) in enumerate(faults):
        rows += nemesis(int(second * S), f, node, 2 + 2 * number, int(took[0] * S) if took else 1000)
    events = [
        {"time_ns": int(t * 0.2 * S), "node": n, "event": "status", "source": "status"}
        for t in range(13)
        for n in NODES
    ]
    events += [
        {
            "time_ns": int(0.1 * S),
            "node": "n1",
            "event": "transition",
            "state": "leader",
            "epoch": 1,
            "leader": "n1",
            "source": "log",
        },
        {
            "time_ns": int(0.1 * S),
            "node": "n2",
            "event": "transition",
            "state": "follower",
            "epoch": 1,
            "leader": "n1",
            "source": "log",
        },
        {
            "time_ns": int(candidacy_s * S),
            "node": "n2",
            "event": "transition",
            "state": "candidate",
            "epoch": 2,
            "source": "log",
        },
        {
            "time_ns": int(candidacy_s * S) + 10**7,
            "node": "n1",
            "event": "transition",
            "state": "follower",
            "epoch": 2,
            "source": "log",
        },
        *later,
    ]
    events.sort(key=lambda e: e["time_ns"])
    stats = availability(frame(rows, HISTORY_COLUMNS), frame(events, EVENTS_COLUMNS))["stats"]
    return stats["disruptive_elections"]


def test_a_candidacy_against_a_live_heard_leader_is_disruptive():
    assert run([]) == 1


@pytest.mark.parametrize("fault", ["kill", "pause", "bounce", "restart", "lose-unfsynced", "stop"])
def test_a_leader_the_nemesis_took_down_is_not_disrupted(fault):
    assert run([(2.2, fault, ["n1"])]) == 0


def test_a_leader_paused_and_resumed_before_the_candidacy_is_not_disrupted():
    assert run([(1.0, "pause", ["n1"]), (2.0, "resume", ["n1"])]) == 0


def test_a_follower_taken_down_leaves_the_leader_disruptable():
    assert run([(2.2, "kill", ["n3"])]) == 1


def test_a_fault_on_the_leader_before_its_election_does_not_excuse_the_candidacy():
    assert run([(0.01, "bounce", ["n1"])]) == 1


@pytest.mark.parametrize(
    "links, disruptive",
    [
        ([["n1", "n2"], ["n2", "n1"], ["n1", "n3"], ["n3", "n1"]], 0),  # the leader cut off
        ([["n1", "n2"], ["n1", "n3"]], 0),  # the leader muted: nobody hears it
        ([["n2", "n1"], ["n2", "n3"], ["n1", "n2"], ["n3", "n2"]], 1),  # the candidate cut off, as a rejoining follower
    ],
)
def test_a_leader_cut_off_or_muted_at_that_moment_is_not_disrupted(links, disruptive):
    assert run([(2.0, "partition", links)]) == disruptive


def test_a_leader_cut_off_by_two_partitions_together_is_not_disrupted():
    """n3 deaf to the leader, then the leader deaf to n2: each cut alone
    leaves n1 a follower it hears both ways, together none; healed before
    the second, n1 keeps n2 and the candidacy disrupts it."""
    deaf, unheard = [["n1", "n3"]], [["n2", "n1"]]
    assert run([(1.5, "partition", deaf)]) == 1
    assert run([(2.0, "partition", unheard)]) == 1
    assert run([(1.5, "partition", deaf), (2.0, "partition", unheard)]) == 0
    assert run([(1.5, "partition", deaf), (1.8, "heal", []), (2.0, "partition", unheard)]) == 1


def test_a_leader_being_cut_off_when_the_candidacy_comes_is_not_disrupted():
    """iptables rules for 5 nodes take half a second: the leader is cut off
    from the partition's invocation, before it is confirmed."""
    cut_off = [["n1", "n2"], ["n2", "n1"], ["n1", "n3"], ["n3", "n1"]]
    assert run([(2.8, "partition", cut_off, 0.6)]) == 0
    assert run([(2.8, "kill", ["n1"], 0.6)]) == 0
    assert run([(3.0, "partition", cut_off, 0.4)]) == 1  # asked for after the candidacy


def test_a_clock_fault_leaves_the_leader_up_and_heard():
    assert run([(2.2, "clock", ["n1"])]) == 1


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.floats(0.2, 2.45),
            st.sampled_from(["kill", "pause", "bounce", "clock", "partition"]),
            st.sampled_from(NODES),
        ),
        max_size=4,
    )
)
def test_disruption_is_counted_exactly_when_no_fault_took_the_leader_down(faults):
    made = [(t, f, [["x", "y"]] if f == "partition" else [node]) for t, f, node in faults]
    downed = any(node == "n1" and f in ("kill", "pause", "bounce") for _, f, node in faults)
    assert run(made) == (0 if downed else 1)


def test_a_live_leader_replaced_by_an_election_it_heard_of_only_afterwards_is_disrupted():
    """KIP-996's flip-flop: n3 wins epoch 2 with the votes of members that
    still hear n1, and n1 learns of it afterwards: n1 was unseated all the same."""
    won = {
        "time_ns": int(2.505 * S),
        "node": "n3",
        "event": "transition",
        "state": "leader",
        "epoch": 2,
        "source": "log",
    }
    assert run([], later=[won]) == 1


def test_a_leader_that_resigns_in_its_own_epoch_is_not_disrupted():
    """Check-quorum: the leader steps down without a later epoch."""
    resigned = {
        "time_ns": int(2.0 * S),
        "node": "n1",
        "event": "transition",
        "state": "resigned",
        "epoch": 1,
        "source": "log",
    }
    assert run([], later=[resigned]) == 0


def test_a_leader_cut_off_earlier_in_its_term_is_not_disrupted():
    cut_off = [["n1", "n2"], ["n2", "n1"], ["n1", "n3"], ["n3", "n1"]]
    assert run([(1.0, "partition", cut_off), (1.5, "heal", [])]) == 0


def test_the_unseating_names_the_node_that_stood_for_the_epoch():
    rows = [
        {"index": 0, "time_ns": 0, "process": 0, "type": "invoke", "f": "append"},
        {"index": 1, "time_ns": 3 * S, "process": 0, "type": "ok", "f": "append"},
    ]
    events = [
        {"time_ns": int(2.4 * S), "node": "n1", "event": "status", "source": "status"},
        {"time_ns": int(0.1 * S), "node": "n1", "event": "transition", "state": "leader", "epoch": 1, "source": "log"},
        {
            "time_ns": int(2.5 * S),
            "node": "n2",
            "event": "transition",
            "state": "candidate",
            "epoch": 2,
            "source": "log",
        },
        {
            "time_ns": int(2.6 * S),
            "node": "n1",
            "event": "transition",
            "state": "follower",
            "epoch": 2,
            "source": "log",
        },
    ]
    [found] = availability(frame(rows, HISTORY_COLUMNS), frame(events, EVENTS_COLUMNS))["stats"]["disruptive"]
    assert found == {"time_ns": int(2.6 * S), "leader": "n1", "leader_epoch": 1, "epoch": 2, "candidate": "n2"}


def test_a_leader_that_resigns_once_another_has_won_a_later_epoch_was_unseated():
    """KIP-996's flip-flop on a pull-based quorum: the member cut off from
    the leader wins epoch 2 with the others' votes; they stop fetching from
    the leader, which resigns in its own epoch, never told of epoch 2."""
    events = [
        {"time_ns": int(t * 0.2 * S), "node": n, "event": "status", "source": "status"}
        for t in range(16)
        for n in NODES
    ]
    events += [
        {"time_ns": int(0.1 * S), "node": "n1", "event": "transition", "state": "leader", "epoch": 1, "source": "log"},
        {
            "time_ns": int(2.5 * S),
            "node": "n2",
            "event": "transition",
            "state": "candidate",
            "epoch": 2,
            "source": "log",
        },
        {"time_ns": int(2.51 * S), "node": "n2", "event": "transition", "state": "leader", "epoch": 2, "source": "log"},
        {
            "time_ns": int(3.0 * S),
            "node": "n1",
            "event": "transition",
            "state": "resigned",
            "epoch": 1,
            "source": "log",
        },
    ]
    rows = [
        {"index": 0, "time_ns": 0, "process": 0, "type": "invoke", "f": "append"},
        {"index": 1, "time_ns": int(3.5 * S), "process": 0, "type": "ok", "f": "append"},
    ]
    events.sort(key=lambda e: e["time_ns"])
    [found] = availability(frame(rows, HISTORY_COLUMNS), frame(events, EVENTS_COLUMNS))["stats"]["disruptive"]
    assert found == {"time_ns": int(3.0 * S), "leader": "n1", "leader_epoch": 1, "epoch": 2, "candidate": "n2"}


def test_a_step_down_that_names_no_epoch_is_judged_by_the_later_epoch_begun():
    """NATS logs no term with a switch to follower: a leader that steps down
    once another stood for a later epoch is unseated all the same."""
    assert (
        run(
            [],
            later=[
                {
                    "time_ns": int(2.6 * S),
                    "node": "n3",
                    "event": "transition",
                    "state": "follower",
                    "epoch": None,
                    "source": "log",
                }
            ],
        )
        == 1
    )
    assert (
        run(
            [(2.2, "kill", ["n1"])],
            later=[
                {
                    "time_ns": int(2.6 * S),
                    "node": "n1",
                    "event": "transition",
                    "state": "follower",
                    "epoch": None,
                    "source": "log",
                }
            ],
        )
        == 0
    )
