"""Faults timed by moments of the protocol (`Simulation.arm`), and Raft's
figure 8 made with them (`scenarios.figure_8`): both ways, the commit rule
dropped breaks leader completeness, the code as it is does not; and where a
fetch answer carries many records, the rule's absence is hidden."""

from __future__ import annotations

import random
import sys
import types
from pathlib import Path

import pytest

import targets.kraft.sim.simulation as simulation
from harness.mutants import mutants
from targets.kraft.sim.invariants import InvariantViolation
from targets.kraft.sim.scenarios import figure_8
from targets.kraft.sim.simulation import SimSettings, Simulation, random_steps, run_schedule

CORE = "targets/kraft/core.py"
COMMIT_RULE = "self.log.epoch_at(candidate - 1) == self.epoch"


@pytest.fixture
def commit_rule_dropped(monkeypatch):
    """The core with its commit rule's clause dropped (`splitbrain mutate`'s drop-clause mutant), run by the simulator."""
    [mutant] = [
        m for m in mutants(CORE, Path(CORE).read_text()) if m.operator == "drop-clause" and m.before == COMMIT_RULE
    ]
    module = types.ModuleType("targets.kraft.mutant_core")
    module.__package__ = "targets.kraft"
    monkeypatch.setitem(sys.modules, module.__name__, module)
    exec(compile(mutant.source, CORE, "exec"), module.__dict__)  # noqa: S102 - our own code, one clause changed
    monkeypatch.setattr(simulation, "RaftCore", module.RaftCore)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_figure_8_breaks_leader_completeness_without_the_commit_rule(commit_rule_dropped, seed):
    broken = figure_8(SimSettings(nodes=5, seed=seed, fetch_max_records=1))
    assert broken is not None and "leader completeness" in broken


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_commit_rule_keeps_figure_8_s_record(seed):
    assert figure_8(SimSettings(nodes=5, seed=seed, fetch_max_records=1)) is None


def test_a_fetch_of_many_records_hides_the_commit_rule_s_absence(commit_rule_dropped):
    """The new leader's record of its epoch reaches a follower with the old
    one, so both rules commit at the same fetch."""
    for seed in (1, 2, 3):
        assert figure_8(SimSettings(nodes=5, seed=seed)) is None


def test_a_leader_cut_off_as_it_is_elected_is_heard_by_no_one():
    sim = Simulation(SimSettings(nodes=5, seed=4))
    sim.run(800)
    old = sim.leader()
    assert old is not None
    sim.arm("election")
    sim.isolate(old)
    mark = len(sim.events)
    while "election" in sim.armed and sim.now_ms < 3000:
        sim.run(sim.settings.tick_ms)
    [(_, elected, event)] = [
        found for found in sim.events[mark:] if found[2]["event"] == "transition" and found[2]["state"] == "leader"
    ]
    assert all((elected, node) in sim.cut for node in sim.ids if node != elected)
    sim.run(50)
    for node, core in sim.nodes.items():
        if node != elected:
            assert all(entry.epoch != event["epoch"] for entry in core.log.entries), f"{node} has its record"


def test_a_leader_that_has_committed_is_not_cut_off_at_its_next_commit():
    """`commit` is a leadership's first commit: armed under a leader that
    has committed already, it waits for the next leader's."""
    sim = Simulation(SimSettings(nodes=5, seed=4))
    sim.run(800)
    old = sim.leader()
    assert old is not None
    sim.arm("commit")
    for _ in range(10):
        sim.submit(old, {"op": "append", "value": "x"})
        sim.run(20)
    assert "commit" in sim.armed and not sim.cut
    sim.isolate(old)
    while "commit" in sim.armed and sim.now_ms < 3000:
        sim.run(sim.settings.tick_ms)
    [(new, _)] = [(node, epoch) for node, epoch in sim.leaders().items() if node != old]
    assert all((new, node) in sim.cut for node in sim.ids if node != new)


def test_moment_steps_come_only_when_asked_for():
    plain = {action for action, _, _ in random_steps(random.Random(11), 200)}
    timed = {action for action, _, _ in random_steps(random.Random(11), 200, moments=True)}
    assert not plain & set(simulation.MOMENT_ACTIONS)
    assert timed >= set(simulation.MOMENT_ACTIONS)


# What the random search found with `simulate --nodes 5 --fetch-max-records 1
# --moments --steps 40 --seed 1 --keep-going` over the mutant (schedule 172
# of 600, the first to break leader completeness), shrunk a step at a time
# (`sim/search.py`'s `shrunk`): every step is needed, the leader cut off as
# it commits and as it is elected among them.
FOUND = [
    ("run", 0, 20),
    ("run", 0, 60),
    ("isolate_at_commit", 6, 7),
    ("isolate_at_election", 3, 0),
    ("run", 0, 60),
    ("isolate_leader", 6, 0),
    ("run", 0, 60),
    ("run", 0, 150),
    ("run", 0, 150),
    ("isolate_at_election", 6, 6),
    ("crash_leader", 6, 0),
    ("run", 0, 400),
    ("isolate_at_election", 6, 2),
    ("run", 0, 60),
    ("heal", 2, 4),
    ("run", 0, 20),
    ("run", 0, 60),
    ("run", 0, 150),
    ("run", 0, 400),
    ("run", 0, 400),
    ("run", 0, 60),
]
FOUND_SETTINGS = SimSettings(nodes=5, seed=172, fetch_max_records=1)


def test_the_random_search_s_schedule_breaks_leader_completeness_without_the_commit_rule(commit_rule_dropped):
    with pytest.raises(InvariantViolation, match="leader completeness"):
        run_schedule(FOUND_SETTINGS, FOUND)


def test_the_random_search_s_schedule_needs_its_moment(commit_rule_dropped):
    run_schedule(FOUND_SETTINGS, [step for step in FOUND if step[0] not in simulation.MOMENT_ACTIONS])


def test_the_commit_rule_keeps_the_random_search_s_schedule():
    run_schedule(FOUND_SETTINGS, FOUND)
