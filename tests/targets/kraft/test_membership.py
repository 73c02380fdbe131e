"""Dynamic voters under deterministic simulation: the correct node keeps every
invariant while voters are added, removed and lose their disks among
partitions, pauses and crashes; each membership bug breaks the invariant it is
named for and shrinks; and the auto-join scenario of KIP-1186 shows its
needless elections only with AckWhenCommitted forced on."""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, find, given, settings
from hypothesis import strategies as st

from targets.kraft.core import RaftConfig
from targets.kraft.sim.invariants import InvariantViolation
from targets.kraft.sim.scenarios import auto_join_growth
from targets.kraft.sim.simulation import SimSettings, Simulation, random_steps, run_schedule

from .schedules import membership_schedules, violates, voter_churn

SIM = settings(deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])

CLUSTERS = st.sampled_from(
    [
        {"nodes": 3, "observers": 1},
        {"nodes": 5, "observers": 1},
        {"nodes": 1, "observers": 2, "standalone": True},
    ]
)


@settings(SIM, max_examples=150)
@given(cluster=CLUSTERS, seed=st.integers(0, 2**32 - 1), pre_vote=st.booleans(), steps=membership_schedules())
def test_correct_node_keeps_every_invariant_with_changing_voters(cluster, seed, pre_vote, steps):
    sim = run_schedule(SimSettings(seed=seed, pre_vote=pre_vote, auto_join=True, **cluster), steps)
    assert sim.leader() is not None, "no leader after healing and quiescing"
    assert sim.monitor.committed, "nothing committed under load"


@pytest.mark.slow
@pytest.mark.parametrize("auto_join", [True, False])
def test_correct_node_over_seeded_membership_schedules(auto_join):
    """150 seeded schedules per case; a failure names its seed."""
    for seed in range(150):
        steps = random_steps(random.Random(seed), 20, membership=True)
        try:
            sim = run_schedule(SimSettings(nodes=3, observers=1, seed=seed, auto_join=auto_join), steps)
        except InvariantViolation as violation:
            pytest.fail(f"seed {seed}, steps {steps}: {violation}")
        assert sim.leader() is not None, f"seed {seed}: no leader at the end"


def test_wiped_voter_comes_back_as_a_new_replica_and_rejoins():
    sim = Simulation(SimSettings(nodes=3, seed=1, auto_join=True))
    sim.run(600)
    old = sim.disks["n2"].directory_id
    sim.wipe("n2")
    new = sim.disks["n2"].directory_id
    assert new != old
    assert not sim.nodes["n2"].is_voter, "a wiped node must not be a voter under its old identity"
    sim.run(2000)
    assert sim.voter_set().directory_of("n2") == new
    changes = [event["voters"] for _, node, event in sim.events if node == sim.leader() and event["event"] == "voters"]
    assert [["n1", "n1.1"], ["n3", "n3.1"]] in changes, "the old identity is removed before the new one is added"


def test_leader_refuses_a_second_voter_change_until_the_first_commits():
    sim = Simulation(SimSettings(nodes=3, observers=2, seed=2))
    sim.run(800)
    first = sim.add_voter("n4")
    second = sim.add_voter("n5")
    sim.run(400)
    assert sim.replies[first].get("error") is None
    assert sim.replies[second]["error"] == "change-in-progress"
    third = sim.add_voter("n5")
    sim.run(400)
    assert sim.replies[third].get("error") is None
    assert len(sim.voter_set().voters) == 5


def test_operator_ack_when_committed_waits_for_the_commit():
    sim = Simulation(SimSettings(nodes=3, observers=1, seed=3))
    sim.run(800)
    request = sim.add_voter("n4", ack_when_committed=True)
    sim.run(400)
    answered = next(e for _, _, e in sim.events if e["event"] == "voter-change-answered")
    assert answered["ack_when_committed"] and answered["offset"] < answered["hwm"]
    assert sim.replies[request]["offset"] == answered["offset"]


def test_config_rejects_unknown_bugs():
    with pytest.raises(ValueError, match="unknown bug"):
        RaftConfig(node_id="n1", bugs=frozenset({"no-such-bug"}))


@pytest.mark.slow
@pytest.mark.parametrize(
    "bug, fragment",
    [
        ("multi-voter-change", "two uncommitted voter changes"),
        ("ignore-directory-id", "wiped node voted under its old identity"),
        ("ack-voter-early", "voter change acknowledged before commit"),
    ],
)
def test_membership_bug_breaks_its_invariant(bug, fragment):
    cluster = {"nodes": 3, "observers": 1}
    search = settings(SIM, max_examples=400, derandomize=True)
    seed, steps = find(
        st.tuples(st.integers(0, 2**16), voter_churn()),
        violates(SimSettings(auto_join=True, bugs=frozenset([bug]), **cluster), fragment),
        settings=search,
    )
    with pytest.raises(InvariantViolation, match=fragment) as violation:
        run_schedule(SimSettings(seed=seed, auto_join=True, bugs=frozenset([bug]), **cluster), steps)
    print(f"\n{bug}: seed {seed}, shrunk schedule {steps}: {violation.value}")
    assert len(steps) <= 6, f"hypothesis did not shrink the schedule: {steps}"
    run_schedule(SimSettings(seed=seed, auto_join=True, **cluster), steps)


@pytest.mark.parametrize(
    "cluster, down",
    [({"nodes": 1, "observers": 2, "standalone": True}, 0), ({"nodes": 3, "observers": 1}, 1)],
    ids=["standalone-plus-two", "three-to-four-one-down"],
)
def test_auto_join_needs_ack_on_write(cluster, down):
    """KIP-1186: with AckWhenCommitted=true the joiner cannot fetch the
    voter set its own request waits on, and the leader resigns; answering
    once written keeps the leader. Over 10 seeds each."""
    for seed in range(10):
        fixed = auto_join_growth(SimSettings(seed=seed, auto_join=True, **cluster), down=down)
        old = auto_join_growth(
            SimSettings(seed=seed, auto_join=True, ack_when_committed_always=True, **cluster), down=down
        )
        grown = cluster["nodes"] + cluster["observers"]
        assert fixed == {"resignations": 0, "elections": 0, "voters": grown}, f"seed {seed}: {fixed}"
        assert old["resignations"] >= 1 and old["elections"] >= 1, f"seed {seed}: {old}"
        assert old["voters"] == grown
