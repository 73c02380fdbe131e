"""Read leases in the reference quorum (`read_lease_ms`): the leader answers
reads from its own state while a majority fetched within the lease by its
clock. On true clocks no read is stale; a leader whose clock is set back as
it is cut off answers stale reads (the simulator finds and shrinks that);
and clock faults are harmless to reads that go through the log."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, find, given, settings
from hypothesis import strategies as st

from targets.kraft.core import RaftConfig
from targets.kraft.sim.invariants import InvariantViolation
from targets.kraft.sim.simulation import LoadedRun, SimSettings, Simulation, run_schedule

from .schedules import clock_jumps, leader_clock_back, schedules, violates

SIM = settings(deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
LEASE_MS = 100  # under the simulator's fetch timeout (200 ms)


@settings(SIM, max_examples=80)
@given(nodes=st.sampled_from([3, 5]), seed=st.integers(0, 2**32 - 1), check_quorum=st.booleans(), steps=schedules())
def test_lease_reads_on_true_clocks_are_never_stale(nodes, seed, check_quorum, steps):
    """Without check-quorum a leader cut off stays leader: only its lease's
    expiry keeps its reads from going stale."""
    sim = run_schedule(SimSettings(nodes=nodes, seed=seed, check_quorum=check_quorum, read_lease_ms=LEASE_MS), steps)
    assert sim.leader() is not None


@settings(SIM, max_examples=60)
@given(nodes=st.sampled_from([3, 5]), seed=st.integers(0, 2**32 - 1), steps=clock_jumps())
def test_clock_faults_are_harmless_to_reads_through_the_log(nodes, seed, steps):
    sim = run_schedule(SimSettings(nodes=nodes, seed=seed), steps)
    assert sim.leader() is not None


def test_a_leader_clock_set_back_makes_its_lease_reads_stale_and_shrinks():
    lease = SimSettings(nodes=3, read_lease_ms=LEASE_MS)
    search = settings(SIM, max_examples=200, derandomize=True)
    seed, steps = find(
        st.tuples(st.integers(0, 2**16), leader_clock_back()), violates(lease, "stale read"), settings=search
    )
    with pytest.raises(InvariantViolation, match="stale read") as violation:
        run_schedule(SimSettings(nodes=3, seed=seed, read_lease_ms=LEASE_MS), steps)
    print(f"\nlease under a clock set back: seed {seed}, shrunk schedule {steps}: {violation.value}")
    assert steps[0][0] == "clock_leader" and len(steps) <= 4, steps
    run_schedule(SimSettings(nodes=3, seed=seed), steps)  # the same schedule, reads through the log


def test_a_lease_as_long_as_the_fetch_timeout_is_refused():
    with pytest.raises(ValueError, match="under the fetch timeout"):
        RaftConfig(node_id="n1", fetch_timeout_ms=600, read_lease_ms=600)


def test_a_leader_resumed_with_fetches_queued_while_it_slept_does_not_count_them_toward_its_lease():
    """The simulator's random search, seed 120 (1 of 300 schedules, true
    clocks), shrunk: the leader paused while the others elect, the new leader
    cut off, the old one resumed. The fetches sent to it before the others
    gave up on it arrive as it wakes, and its lease counted them as fresh,
    though their senders had heard nothing from it for a fetch timeout and
    had elected another: it answered a read the new leader's writes had made
    stale. A fetch now vouches for the lease only from when the leader sent
    the answer it says it received."""
    steps = [("run", 0, 60), ("pause_leader", 2, 1), ("run", 0, 400), ("isolate_leader", 0, 7), ("resume", 6, 6)]
    run_schedule(SimSettings(nodes=3, seed=120, read_lease_ms=LEASE_MS), [*steps, ("run", 0, 150)])


def test_a_follower_the_leader_hears_but_cannot_answer_does_not_hold_its_lease():
    """An asymmetric cut: the leader's answers to one follower are lost
    while that follower's fetches still reach it; a moment later the other
    follower and the leader are cut apart. The first follower gives up on
    the leader (it heard no answer for a fetch timeout) and votes for the
    second, whose vote request the leader never hears; the leader, still
    taking the first one's fetches, counted it toward its lease and
    answered reads from its state while the new leader committed writes."""
    sim = Simulation(SimSettings(nodes=3, seed=67, read_lease_ms=LEASE_MS))
    load = LoadedRun(sim)
    load.run(600)
    leader = sim.leader()
    assert leader is not None
    heard, cut_off = (node for node in sim.ids if node != leader)
    sim.cut.add((leader, heard))
    load.run(5)
    sim.cut.update({(cut_off, leader), (leader, cut_off)})
    load.run(1500)
    assert sim.leader() not in (None, leader)
