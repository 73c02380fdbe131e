"""Judging a run while it goes (`check_prefix`, what `run --check-live`
runs): over any first part of a simulated run, a checker that says false
says false over the whole run too (its batch verdict), and over the whole
history it answers as the batch checker does. Histories of planted bugs
(stale-read, ack-before-commit, forget-vote) are cut at hypothesis's times;
the correct node's first parts are never flagged."""

from __future__ import annotations

import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import targets
from checkers.verdict import PREFIX_SOUND, check_prefix, check_tables
from targets.kraft.simulation import SimSettings, random_steps, run_schedule

from .sim_histories import tables

KRAFT = targets.get("kraft").capabilities.as_json()
BUGS = ((), ("stale-read",), ("ack-before-commit",), ("forget-vote",))


def first_part(history, events, cut: float):
    """The rows recorded before `cut` (a share of the run's time), as a live look sees them."""
    end = max(int(history["time_ns"].max()), int(events["time_ns"].max() if len(events) else 0))
    at_ns = int(end * cut)
    return (
        history[history["time_ns"] <= at_ns].reset_index(drop=True),
        events[events["time_ns"] <= at_ns].reset_index(drop=True),
    )


@settings(max_examples=30, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    bugs=st.sampled_from(BUGS),
    seed=st.integers(0, 2**32 - 1),
    cuts=st.lists(st.floats(0.05, 1.0), min_size=1, max_size=3),
)
def test_a_violation_in_a_first_part_is_one_of_the_whole_run(bugs, seed, cuts):
    nodes = 5 if "forget-vote" in bugs else 3
    sim = run_schedule(
        SimSettings(nodes=nodes, seed=seed, bugs=frozenset(bugs), check_invariants=False),
        random_steps(random.Random(seed), 16),
    )
    history, events, final = tables(sim)
    whole = check_tables(history, events, final, budget_s=5, capabilities=KRAFT)["checkers"]
    over_all = check_prefix(history, events, 5, KRAFT)
    assert set(over_all) == {name for name in PREFIX_SOUND if name in whole}
    for name, found in over_all.items():
        if "unknown" not in (found["valid"], whole[name]["valid"]):
            assert found["valid"] == whole[name]["valid"], (name, found, whole[name])
    for cut in cuts:
        for name, found in check_prefix(*first_part(history, events, cut), 5, KRAFT).items():
            if not bugs:
                assert found["valid"] in (True, "unknown"), (cut, name, found)
            if found["valid"] is False:
                assert whole[name]["valid"] is False, (cut, name, found, whole[name])
