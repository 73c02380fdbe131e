"""Hypothesis strategies for fault schedules of the simulated cluster.

A schedule is a list of `(action, node index, amount)` steps for
`run_schedule`. `schedules()` draws from every fault the simulator has; the
narrower families aim a bounded search at the window a planted bug needs.
"""

from __future__ import annotations

from dataclasses import replace

from hypothesis import strategies as st

from targets.kraft.sim.invariants import InvariantViolation
from targets.kraft.sim.simulation import (
    ACTIONS,
    CLOCK_ACTIONS,
    DISK_ACTIONS,
    MEMBERSHIP_ACTIONS,
    SimSettings,
    run_schedule,
)

RUN_MS = st.sampled_from([5, 10, 20, 60, 150, 400])
INDEX = st.integers(0, 7)


def step(actions=ACTIONS[1:]) -> st.SearchStrategy:
    faults = st.tuples(st.sampled_from(actions), INDEX, INDEX)
    runs = st.tuples(st.just("run"), st.just(0), RUN_MS)
    return st.one_of(runs, faults)


def schedules(max_steps: int = 24) -> st.SearchStrategy:
    """Any mix of load, partitions, cuts, pauses, crashes, restarts and network settings."""
    return st.lists(step(), max_size=max_steps)


def election_churn(max_steps: int = 16) -> st.SearchStrategy:
    """A leader crash under a slow, lossy network, then short runs and node
    bounces: restarts that land in the middle of elections."""
    churn = step(("bounce", "crash_leader", "start"))
    return st.tuples(st.sampled_from([1, 2]), st.lists(churn, min_size=1, max_size=max_steps)).map(
        lambda drawn: [("network", 0, drawn[0]), ("crash_leader", 0, 0), *drawn[1]]
    )


def power_losses(max_steps: int = 24) -> st.SearchStrategy:
    """Every fault, with power losses (unflushed writes lost) mixed in."""
    return st.lists(step(ACTIONS[1:] + DISK_ACTIONS), max_size=max_steps)


def clock_jumps(max_steps: int = 24) -> st.SearchStrategy:
    """Every fault, with nodes' clocks set off true time mixed in."""
    return st.lists(step(ACTIONS[1:] + CLOCK_ACTIONS), max_size=max_steps)


def leader_clock_back() -> st.SearchStrategy:
    """The leader's clock set off true time as it is cut off, a while of
    load, then anything: a lease measured on that clock may outlive the
    followers' promise not to elect another leader."""
    return st.tuples(INDEX, RUN_MS, st.lists(step(), max_size=4)).map(
        lambda drawn: [("clock_leader", 0, drawn[0]), ("isolate_leader", 0, 0), ("run", 0, drawn[1]), *drawn[2]]
    )


def lagging_losses() -> st.SearchStrategy:
    """Followers cut off so the high watermark lags, a while of load, then a
    power loss of a node and the cut healed: what the leader then counts must
    not be an offset the lost life reported."""
    return st.tuples(st.lists(INDEX, min_size=1, max_size=3), RUN_MS, INDEX, RUN_MS).map(
        lambda drawn: [
            *(("isolate", i, 0) for i in drawn[0]),
            ("run", 0, drawn[1]),
            ("lose_unsynced", drawn[2], 0),
            ("heal", 0, 0),
            ("run", 0, drawn[3]),
        ]
    )


def leader_power_loss() -> st.SearchStrategy:
    """A follower crashed, a while of load, the other follower paused, the
    leader's power lost, the crashed follower restarted: the two elect a
    leader without what only the paused one and the old leader's memory held."""
    return st.tuples(INDEX, RUN_MS, INDEX).map(
        lambda drawn: [
            ("crash", drawn[0], 0),
            ("run", 0, drawn[1]),
            ("pause", drawn[2], 0),
            ("lose_leader", 0, 0),
            ("start", drawn[0], 0),
            ("run", 0, 400),
            ("resume_all", 0, 0),
        ]
    )


def membership_schedules(max_steps: int = 24) -> st.SearchStrategy:
    """Every fault, with disk losses and operators' voter changes mixed in."""
    return st.lists(step(ACTIONS[1:] + MEMBERSHIP_ACTIONS), max_size=max_steps)


def voter_churn(max_steps: int = 12) -> st.SearchStrategy:
    """Voter changes and disk losses back to back, with short runs between."""
    churn = step(MEMBERSHIP_ACTIONS + ("crash_leader", "bounce"))
    return st.lists(churn, min_size=1, max_size=max_steps)


def violates(settings: SimSettings, fragment: str):
    """The predicate a planted-bug search looks for: a drawn (seed, schedule)
    that breaks the invariant whose message holds `fragment`."""

    def predicate(drawn) -> bool:
        seed, steps = drawn
        try:
            run_schedule(replace(settings, seed=seed), steps)
        except InvariantViolation as violation:
            return fragment in str(violation)
        return False

    return predicate
