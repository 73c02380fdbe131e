"""`simulate --search novelty` (targets/kraft/sim/search.py): the novelty
search drives the simulated cluster as it drives a run, learns into a
memory file a campaign can share, reports a violation with the operations
it made (aimed by role, as a run's), and those become a real run's faults
at stretched moments."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from history.faults import AT_ONCE
from nemesis.novelty import Memory
from nemesis.simulated import NoveltySearch
from targets.kraft.sim.invariants import InvariantViolation
from targets.kraft.sim.search import kind
from targets.kraft.sim.simulation import SimSettings, run_schedule
from targets.kraft.target import TARGET


def simulate(bug: str, schedules: int, memory) -> dict:
    """The search over `schedules` from what `memory` holds, and what it learned written back (as `simulate --memory`)."""
    search = NoveltySearch(Memory.read(memory))
    verdict = TARGET.simulate({"nodes": 5, "observers": 0, "bugs": [bug]}, schedules, 20, 0, False, True, list, search)
    search.memory.write(memory)
    return verdict


def test_the_search_finds_a_bug_and_reports_the_operations_it_made(tmp_path):
    memory = tmp_path / "novelty.json"
    verdict = simulate("stale-read", 3, memory)
    result = verdict["checkers"]["simulation-invariants"]
    assert verdict["valid"] is False and result["stats"]["search"] == "novelty"
    first = result["anomalies"][0]
    assert "stale read" in first["violation"] and first["ops"]
    roles = ("leader", "follower", "candidate", *AT_ONCE, None)
    assert all(op["args"].get("target") in roles for op in first["ops"]), first["ops"]
    assert [op["at_s"] for op in first["ops"]] == sorted(op["at_s"] for op in first["ops"])
    ops, limit_s, workload, timeouts = TARGET.real_schedule({"nodes": 5}, first)
    assert workload == "register" and ops[-1] == {"at_s": limit_s, "f": "heal-all", "args": {}}
    # Stretched: the real timeouts over the simulator's 100 ms (300 ms, or ten times that where a node is bounced).
    assert ops[1]["at_s"] == round(first["ops"][0]["at_s"] * timeouts.get("election_timeout_ms", 300) / 100, 3)
    learned = Memory.read(memory)
    assert learned.visits and learned.moves
    simulate("stale-read", 2, memory)
    assert sum(Memory.read(memory).visits.values()) > sum(learned.visits.values())


def test_a_correct_cluster_passes_the_search_and_a_bad_memory_file_is_one_line(tmp_path):
    settings = {"nodes": 5, "observers": 0}
    verdict = TARGET.simulate(settings, 3, 20, 0, False, True, lambda items: items, NoveltySearch(Memory()))
    assert verdict["valid"] is True
    bad = tmp_path / "novelty.json"
    bad.write_text("{")
    done = subprocess.run(
        [sys.executable, "-m", "harness.cli", "simulate", "--search", "novelty", "--memory", str(bad), "--quiet"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert str(bad) in done.stderr and json.loads(done.stdout or "null") is None
    nowhere = bad / "schedules"  # under a file: no folder can be made there
    done = subprocess.run(
        [sys.executable, "-m", "harness.cli", "simulate", "--write-schedules", str(nowhere), "--quiet"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert str(nowhere) in done.stderr and not done.stdout
    unwritable = tmp_path / "missing" / "novelty.json"  # read as empty, but written at the end
    done = subprocess.run(
        [sys.executable, "-m", "harness.cli", "simulate", "--search", "novelty", "--memory", str(unwritable)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert str(unwritable) in done.stderr and not done.stdout


def test_a_random_schedule_s_violation_comes_with_a_shrunk_schedule_that_still_breaks_it():
    verdict = TARGET.simulate({"nodes": 3, "bugs": ["stale-read"]}, 30, 20, 0, False, False, lambda items: items)
    found = verdict["checkers"]["simulation-invariants"]["anomalies"][0]
    assert len(found["shrunk"]) < len(found["steps"])
    settings = SimSettings(seed=found["seed"], nodes=3, bugs=frozenset(["stale-read"]))
    with pytest.raises(InvariantViolation) as again:
        run_schedule(settings, [tuple(step) for step in found["shrunk"]])
    assert kind(str(again.value)) == kind(found["violation"]) == "stale read by #"
    for index in range(len(found["shrunk"])):  # every step left is needed
        try:
            run_schedule(settings, [tuple(s) for k, s in enumerate(found["shrunk"]) if k != index])
        except InvariantViolation as other:
            assert kind(str(other)) != kind(found["violation"])


def test_each_failing_schedule_is_written_with_the_other_timings_it_broke_again_under(tmp_path):
    """A seed decides every message's delay, and a real cluster keeps none:
    each written schedule is run again under RETIMINGS other seeds, and its
    verdict keeps how many broke the same way. The measure is the
    simulation's, so it is the same twice; and it tells a bug's failing
    schedules apart."""
    from harness import sim_schedules
    from targets.kraft.sim.search import RETIMINGS

    settings = {"nodes": 3, "observers": 0, "bugs": ["ack-before-commit"]}
    verdict = TARGET.simulate(settings, 21, 20, 0, False, True, lambda items: items)
    written = sim_schedules.write(tmp_path, TARGET, settings, {}, verdict)
    held = []
    for run_dir in written:
        [anomaly] = json.loads((run_dir / "verdict.json").read_text())["checkers"]["simulation-invariants"]["anomalies"]
        assert anomaly["retimed"]["of"] == RETIMINGS
        assert TARGET.steadiness(settings, anomaly) == (anomaly["retimed"]["held"], RETIMINGS)
        held.append(anomaly["retimed"]["held"])
    assert len(held) >= 3 and min(held) < max(held)
    assert sim_schedules.held(written[0]) == f"; it broke again under {held[0]} of {RETIMINGS} other timings"


def test_a_core_that_raises_halts_its_node_a_violation_with_its_schedule_not_a_crash(monkeypatch):
    """A defect of the core (here: n2 raises on its first tick after 3 s)
    is what the real node's shell halts on and `node-crashes` counts: the
    simulation reports it as a violation of the schedule, with its seed and
    its shrunk steps, instead of raising out of `simulate`."""
    from targets.kraft.core import RaftCore

    tick = RaftCore.tick

    def broken(self, now_ms):
        if self.node_id == "n2" and now_ms > 3000:
            raise RuntimeError("a rule of its own broken")
        return tick(self, now_ms)

    monkeypatch.setattr(RaftCore, "tick", broken)
    verdict = TARGET.simulate({"nodes": 3}, 2, 20, 0, False, True, lambda items: items)
    found = verdict["checkers"]["simulation-invariants"]["anomalies"]
    assert [a["seed"] for a in found] == [0, 1] and verdict["valid"] is False
    assert all(a["violation"].endswith(": n2 halted: RuntimeError: a rule of its own broken") for a in found), found
    assert all(a["shrunk"] == [] for a in found)  # (no fault needed)
