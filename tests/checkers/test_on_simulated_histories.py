"""The checkers over histories of the simulated cluster: generated histories
of the correct node are never flagged, and when a planted bug breaks an
invariant (seen by the simulator's omniscient monitor), the checker reading
only the history catches it too."""

from __future__ import annotations

import random
import re
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from checkers.verdict import check_tables
from targets.kraft.sim.invariants import InvariantViolation
from targets.kraft.sim.simulation import SimSettings, random_steps, run_schedule
from tests.targets.kraft.schedules import membership_schedules, schedules

from .sim_histories import KRAFT, tables

SAFETY = ("election-safety", "single-leader-per-epoch", "committed-data-loss", "linearizable")
JOINING = {"nodes": 3, "observers": 1, "auto_join": True}


@settings(max_examples=60, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(nodes=st.sampled_from([3, 5]), seed=st.integers(0, 2**32 - 1), steps=schedules(16))
@example(nodes=3, seed=2, steps=[("run", 0, 150), ("pause", 0, 0), ("run", 0, 400)])  # 20 indeterminate writes on a key
def test_the_correct_nodes_histories_are_never_flagged(nodes, seed, steps):
    """Never flagged. The linearizability search may give up (`unknown`) within
    its budget: a pause can leave a key with some twenty indeterminate writes,
    whose orders the search explores exponentially (Knossos and Porcupine
    too); giving up is not a verdict, a false one would be."""
    sim = run_schedule(SimSettings(nodes=nodes, seed=seed), steps)
    verdict = check_tables(*tables(sim), budget_s=5, capabilities=KRAFT)
    for name in SAFETY:
        allowed = (True, "unknown") if name == "linearizable" else (True,)
        assert verdict["checkers"][name]["valid"] in allowed, (name, verdict["checkers"][name])


@settings(max_examples=40, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), steps=membership_schedules(16))
# A wiped node's refusal of a stale generation, logged with no directory id
# right after its new start at epoch 0, was compared with its old disk's epoch 1.
@example(seed=0, steps=[("wipe", 0, 0), ("bounce", 0, 0)])
def test_the_correct_nodes_histories_with_voter_changes_are_never_flagged(seed, steps):
    sim = run_schedule(SimSettings(seed=seed, **JOINING), steps)
    verdict = check_tables(*tables(sim), budget_s=5, capabilities=KRAFT)
    for name in (*SAFETY, "membership"):
        allowed = (True, "unknown") if name == "linearizable" else (True,)
        assert verdict["checkers"][name]["valid"] in allowed, (name, verdict["checkers"][name])


@pytest.mark.parametrize("bugs, forgotten", [((), False), (("forget-vote",), True)])
def test_a_vote_lost_at_a_restart_is_seen_before_anyone_votes_twice(bugs, forgotten):
    """A follower bounced in the epoch it voted in: the correct node comes back
    naming its vote; forget-vote's comes back with none, which election-safety
    flags where the target declares `transitions_name_vote` (and not elsewhere)."""
    steps = [("run", 0, 400), ("crash_leader", 0, 0), ("run", 0, 1500), ("bounce", 1, 0), ("run", 0, 400)]
    sim = run_schedule(SimSettings(nodes=5, seed=1, bugs=frozenset(bugs), check_invariants=False), steps)
    found = check_tables(*tables(sim), capabilities=KRAFT)["checkers"]["election-safety"]
    kinds = {a["kind"] for a in found["anomalies"]}
    assert ("vote-forgotten" in kinds) is forgotten and "double-vote" not in kinds
    undeclared = check_tables(*tables(sim), capabilities={**KRAFT, "transitions_name_vote": False})
    assert undeclared["checkers"]["election-safety"]["valid"] is True


def voter_changes(rng: random.Random) -> list:
    """Faults with disk losses and operators' voter changes mixed in (what the membership bugs need)."""
    return random_steps(rng, 16, membership=True)


def churn(rng: random.Random) -> list:
    """A leader crash on a slow network, then short runs and bounces (what forget-vote needs)."""
    steps = [("network", 0, 1), ("crash_leader", 0, 0)]
    for _ in range(8):
        steps += [("run", 0, rng.choice((5, 20, 60, 150, 400))), ("bounce", rng.randrange(8), 0)]
    return steps


def lagging_loss(rng: random.Random) -> list:
    """Followers cut off so the high watermark lags, a power loss of a node, the cut healed (what ignore-generation needs)."""
    cut = [("isolate", rng.randrange(8), 0) for _ in range(rng.randint(1, 3))]
    return [
        *cut,
        ("run", 0, rng.choice((5, 20, 60, 150))),
        ("lose_unsynced", rng.randrange(8), 0),
        ("heal", 0, 0),
        ("run", 0, rng.choice((5, 20, 60))),
    ]


def healed_without_trace(sim, violation: str) -> bool:
    """A leader elected without a committed record that another leader of
    a later epoch then carried on: every copy holds, at that offset, a
    record of an epoch before the one that lacked it. Nothing was lost and
    no reply could show it, so no checker of the history can (the monitor
    sees the cores)."""
    found = re.search(r"leader completeness: \w+ leads epoch (\d+) without committed offset (\d+)", violation)
    if found is None:
        return False
    epoch, offset = int(found.group(1)), int(found.group(2))
    copies = [core.log.entries for core in sim.nodes.values() if core is not None]
    return bool(copies) and all(
        offset < len(entries) and entries[offset] == copies[0][offset] and entries[offset].epoch < epoch
        for entries in copies
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    "bug, cluster, make_steps, checkers",
    [
        ("stale-read", {"nodes": 3}, lambda rng: random_steps(rng, 20), {"linearizable"}),
        # Acknowledged writes lost show only if a read sees it; lost appends always show.
        ("ack-before-commit", {"nodes": 3}, lambda rng: random_steps(rng, 20), {"committed-data-loss", "linearizable"}),
        ("forget-vote", {"nodes": 5}, churn, {"election-safety", "single-leader-per-epoch"}),
        # A node cut off asks for pre-votes; followers of the live leader must refuse them.
        ("prevote-always", {"nodes": 3}, lambda rng: random_steps(rng, 12), {"election-safety"}),
        ("multi-voter-change", JOINING, voter_changes, {"membership"}),
        ("ignore-directory-id", JOINING, voter_changes, {"membership"}),
        ("ack-voter-early", JOINING, voter_changes, {"membership"}),
        # The generation rule is read from the leader's commit events; a lost append shows only on a failover.
        ("ignore-generation", {"nodes": 5, "flush_interval_ms": 100}, lagging_loss, {"committed-data-loss"}),
        (
            "ack-before-fsync",
            {"nodes": 3},
            lambda rng: random_steps(rng, 20, power_losses=True),
            {"committed-data-loss", "linearizable"},
        ),
    ],
)
def test_a_violation_the_monitor_sees_is_caught_from_the_history(bug, cluster, make_steps, checkers):
    caught = 0
    for seed in range(400):
        steps = make_steps(random.Random(seed))
        settings_ = SimSettings(seed=seed, bugs=frozenset([bug]), **cluster)
        try:
            run_schedule(settings_, steps)
            continue
        except InvariantViolation as seen:
            violation = str(seen)
        sim = run_schedule(replace(settings_, check_invariants=False), steps)
        if healed_without_trace(sim, violation):
            continue
        verdict = check_tables(*tables(sim), capabilities=KRAFT)
        flagged = {name for name in checkers if verdict["checkers"][name]["valid"] is False}
        assert flagged, f"seed {seed}: the monitor saw {bug} break an invariant, the checkers saw nothing"
        caught += 1
        if caught == 3:
            return
    pytest.fail(f"{bug}: fewer than 3 violations in 400 schedules")
