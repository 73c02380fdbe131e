"""Judging a run while it goes (`check_prefix`, what `run --check-live`
runs): over any first part of a simulated run, a checker that says false
says false over the whole run too (its batch verdict); over the whole
history it answers as the batch checker does, but where the batch one needs
the final logs. Histories of the correct node and of planted bugs
(stale-read, ack-before-commit, forget-vote; ack-voter-early with voter
changes; ignore-generation with power losses) are cut at hypothesis's times;
the correct node's first parts are never flagged."""

from __future__ import annotations

import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from checkers.registry import CHECKERS
from checkers.verdict import as_judged_so_far, check_prefix, check_tables
from targets.kraft.sim.simulation import SimSettings, random_steps, run_schedule

from .sim_histories import KRAFT, tables
from .test_on_simulated_histories import JOINING, lagging_loss, voter_changes

# The bug, the cluster it needs, the faults that show it.
CASES = (
    ((), {"nodes": 3}, lambda rng: random_steps(rng, 16)),
    (("stale-read",), {"nodes": 3}, lambda rng: random_steps(rng, 16)),
    (("ack-before-commit",), {"nodes": 3}, lambda rng: random_steps(rng, 16)),
    (("forget-vote",), {"nodes": 5}, lambda rng: random_steps(rng, 16)),
    (("ack-voter-early",), JOINING, voter_changes),
    (("ignore-generation",), {"nodes": 5, "flush_interval_ms": 100}, lagging_loss),
)


def simulated(case, seed: int):
    """The (history, events, final) tables of a simulated run of one of CASES."""
    bugs, cluster, steps = case
    sim = run_schedule(
        SimSettings(seed=seed, bugs=frozenset(bugs), check_invariants=False, **cluster), steps(random.Random(seed))
    )
    return tables(sim)


def first_part(history, events, cut: float):
    """The rows recorded before `cut` (a share of the run's time), as a live look sees them."""
    end = max(int(history["time_ns"].max()), int(events["time_ns"].max() if len(events) else 0))
    at_ns = int(end * cut)
    return (
        history[history["time_ns"] <= at_ns].reset_index(drop=True),
        events[events["time_ns"] <= at_ns].reset_index(drop=True),
    )


@settings(max_examples=15, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    case=st.sampled_from(CASES),
    seed=st.integers(0, 2**32 - 1),
    cuts=st.lists(st.floats(0.05, 1.0), min_size=1, max_size=3),
)
def test_a_violation_in_a_first_part_is_one_of_the_whole_run(case, seed, cuts):
    bugs = case[0]
    history, events, final = simulated(case, seed)
    whole = check_tables(history, events, final, budget_s=5, capabilities=KRAFT)["checkers"]
    over_all = check_prefix(history, events, 5, KRAFT)
    assert set(over_all) == {c.name for c in CHECKERS if c.so_far and c.name in whole}
    for name, found in over_all.items():
        if "unknown" in (found["valid"], whole[name]["valid"]):
            continue
        # What only the final logs show, the whole run's batch verdict may hold where the live one cannot.
        assert found["valid"] == as_judged_so_far(name, whole[name]), (name, found, whole[name])
    for cut in cuts:
        for name, found in check_prefix(*first_part(history, events, cut), 5, KRAFT).items():
            if not bugs:
                assert found["valid"] in (True, "unknown"), (cut, name, found)
            if found["valid"] is False:
                assert whole[name]["valid"] is False, (cut, name, found, whole[name])


def test_the_batch_answer_over_the_cases_judged_live_sets_aside_only_what_the_final_copies_show():
    lost = {"kind": "lost-acknowledged-append"}
    cut = {"kind": "truncated-committed"}
    assert as_judged_so_far("committed-data-loss", {"valid": False, "anomalies": [lost]}) is True
    assert as_judged_so_far("committed-data-loss", {"valid": False, "anomalies": [lost, cut]}) is False
    assert as_judged_so_far("membership", {"valid": False, "anomalies": [{"kind": "lost-voter-change"}]}) is True
    assert as_judged_so_far("linearizable", {"valid": False, "anomalies": [lost]}) is False
    assert as_judged_so_far("committed-data-loss", {"valid": "unknown", "anomalies": []}) == "unknown"
