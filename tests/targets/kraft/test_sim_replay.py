"""A simulated schedule as a real run's faults (targets/kraft/sim/replay.py):
moments stretched by the ratio of the timeouts, named nodes kept, the
leader aimed at as the leader (none if none leads), messages delayed as the
simulator delays them and dropped at its rates (again after each heal),
every node healed and started
when the steps end; the workload whose checkers see what broke."""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st

from targets.kraft.sim.replay import first_leader, lease_for, real_schedule, scale_of, timeouts_for, workload_for
from targets.kraft.sim.simulation import SimSettings, random_steps


def test_a_schedule_becomes_the_same_faults_at_stretched_moments():
    steps = [
        ("run", 0, 100),
        ("isolate", 1, 0),
        ("run", 0, 50),
        ("heal", 0, 0),
        ("pause_leader", 0, 0),
        ("cut", 0, 2),
        ("network", 0, 2),
        ("crash", 5, 0),
        ("wipe", 0, 0),
        ("run", 0, 20),
    ]
    ops, limit_s = real_schedule(steps, 3, 3.0, leader="n2")
    made = [(op["at_s"], op["f"], op["args"]) for op in ops]
    assert made == [
        (-1.0, "latency", {"latency_ms": 14, "jitter_ms": 10}),
        (0.0, "rename", {"leader": "n2"}),
        (0.3, "partition", {"links": [["n1", "n2"], ["n2", "n1"], ["n2", "n3"], ["n3", "n2"]], "clients": 2}),
        (0.45, "heal", {}),
        (0.45, "latency", {"latency_ms": 14, "jitter_ms": 10}),
        (0.45, "pause", {"target": "leader", "only_a_leader": True}),
        (0.45, "partition", {"links": [["n1", "n3"]]}),
        (0.45, "message-loss", {"per_mille": 200, "message": "any"}),
        (0.45, "latency", {"latency_ms": 92, "jitter_ms": 88}),
        (0.45, "kill", {"nodes": ["n3"]}),
        (0.51, "heal-all", {}),
        (3.0, "heal-all", {}),
    ]
    assert limit_s == 3.0


def test_a_lossy_network_drops_messages_at_its_rate_until_it_changes_and_again_after_a_heal():
    steps = [("network", 0, 1), ("run", 0, 100), ("heal", 0, 0), ("run", 0, 100), ("network", 0, 0)]
    ops, _ = real_schedule(steps, 3, 1.0)
    losses = [(op["at_s"], op["args"]["per_mille"]) for op in ops if op["f"] == "message-loss"]
    assert losses == [(0.0, 50), (0.1, 50), (0.2, 0)]
    assert not [
        op for op in real_schedule([("network", 0, 0), ("network", 0, 3)], 3, 1.0)[0] if op["f"] == "message-loss"
    ]


def test_the_stretch_is_the_real_timeout_over_the_simulated_one():
    assert scale_of({}, 300) == 300 / SimSettings.election_timeout_ms
    # A timeout given to simulate ran the simulation and goes to the real run: the same on both sides.
    assert scale_of({"election_timeout_ms": 300}, 300) == scale_of({"election_timeout_ms": 50}, 50) == 1.0
    assert scale_of({}, 3000) == 30


def test_a_schedule_that_bounces_a_node_runs_on_stretched_timeouts():
    """A real restart takes a moment the simulator's does not: the nodes' timeouts, and so the moments, are stretched."""
    defaults = {"election_timeout_ms": 300, "fetch_timeout_ms": 600}
    stretched = {"election_timeout_ms": 3000, "fetch_timeout_ms": 6000}
    assert timeouts_for({}, {"steps": [["run", 0, 5], ["bounce", 4, 1]]}, defaults) == stretched
    assert timeouts_for({}, {"ops": [{"at_s": 0.1, "f": "bounce", "args": {}}]}, defaults) == stretched
    # A power loss's unclean start waits ten fetch timeouts: stretched, longer than a run waits to settle.
    assert timeouts_for({}, {"ops": [{"at_s": 0.1, "f": "lose-unfsynced", "args": {}}]}, defaults) == {}
    assert timeouts_for({}, {"steps": [["lose_leader", 0, 0], ["start", 1, 0]]}, defaults) == {}
    # A bounce beside a power loss: the unclean start's wait, stretched, would outlast the settling.
    assert timeouts_for({}, {"steps": [["bounce", 2, 0], ["lose_unsynced", 1, 0]]}, defaults) == {}
    assert timeouts_for({}, {"ops": [{"f": "bounce", "args": {}}, {"f": "lose-unfsynced", "args": {}}]}, defaults) == {}
    assert timeouts_for({}, {"steps": [["isolate", 0, 0], ["heal", 0, 0]]}, defaults) == {}
    assert timeouts_for({"election_timeout_ms": 50}, {"steps": [["bounce", 4, 1]]}, defaults) == {}


def test_a_read_lease_keeps_its_share_of_the_fetch_timeout():
    """The simulator's lease of 100 ms under its fetch timeout of 200 ms is
    half of it; replayed on nodes whose fetch timeout is 6 s, half of that."""
    defaults = {"election_timeout_ms": 300, "fetch_timeout_ms": 600}
    assert lease_for({"read_lease_ms": 100}, {"fetch_timeout_ms": 6000}, defaults) == {"read_lease_ms": 3000}
    assert lease_for({"read_lease_ms": 100}, {}, defaults) == {"read_lease_ms": 300}
    # Timeouts given to simulate run both sides: the lease as given.
    assert lease_for({"read_lease_ms": 250, "fetch_timeout_ms": 500}, {}, defaults) == {"read_lease_ms": 250}
    assert lease_for({}, {"fetch_timeout_ms": 6000}, defaults) == {}


@given(seed=st.integers(0, 2**31 - 1), count=st.integers(0, 40), nodes=st.sampled_from([3, 5]))
def test_every_schedule_ends_healed_in_order_within_its_time_limit(seed, count, nodes):
    ops, limit_s = real_schedule(random_steps(random.Random(seed), count, power_losses=True), nodes, 3.0)
    times = [op["at_s"] for op in ops]
    assert times == sorted(times) and ops[-1] == {"at_s": limit_s, "f": "heal-all", "args": {}}
    named = [n for op in ops for n in op["args"].get("nodes", []) + sum(op["args"].get("links", []), [])]
    assert set(named) <= {f"n{i}" for i in range(1, nodes + 1)}


def test_the_first_leader_is_the_simulations_and_the_workload_sees_what_broke():
    assert first_leader(SimSettings(seed=0)) in ("n1", "n2", "n3")
    assert workload_for("t=5ms: stale read by n1: k=1, expected one of [2]") == "register"
    assert workload_for("t=5ms: acknowledged append lost: offset 3") == "append"


def test_only_the_membership_steps_the_simulation_made_carry_over():
    steps = [("wipe", 0, 0), ("run", 0, 10), ("remove_voter", 1, 0), ("remove_voter", 2, 0), ("add_voter", 2, 0)]
    steps += [("wipe", 1, 0), ("run", 0, 10), ("remove_voter", 0, 0)]
    ops, _ = real_schedule(steps, 3, 1.0, changed={0, 2, 3, 4, 7})
    assert [(op["f"], op["args"]) for op in ops[1:-2]] == [
        ("wipe", {"nodes": ["n1"]}),
        ("shrink", {"nodes": ["n2", "n3"]}),  # two removals at one instant: one request, as the simulator's
        ("rejoin", {"nodes": ["n3"]}),
        ("shrink", {"nodes": ["n1"]}),
    ]


def test_the_membership_step_that_broke_the_simulation_counts_as_made():
    """ack-voter-early breaks an invariant inside the voter change itself: that change carries over."""
    from targets.kraft.target import TARGET

    settings = {"nodes": 3, "observers": 0, "bugs": ["ack-voter-early"]}
    verdict = TARGET.simulate(settings, 20, 20, 0, True, False, lambda items: items)
    [violation] = verdict["checkers"]["simulation-invariants"]["anomalies"]
    ops, _, workload, _ = TARGET.real_schedule(settings, violation)
    assert {"shrink", "rejoin", "wipe"} & {op["f"] for op in ops} and workload == "append"


def test_a_random_schedule_is_replayed_as_its_shrunk_steps():
    """The simulation's shrunk schedule (each step left needed there) is what the real run makes."""
    from targets.kraft.target import TARGET

    settings = {"nodes": 3, "observers": 0, "bugs": ["stale-read"]}
    verdict = TARGET.simulate(settings, 30, 20, 0, False, False, lambda items: items)
    found = verdict["checkers"]["simulation-invariants"]["anomalies"][0]
    ops, _, _, _ = TARGET.real_schedule(settings, found)
    shrunk, _ = real_schedule(
        [tuple(s) for s in found["shrunk"]], 3, 3.0, first_leader(SimSettings(seed=found["seed"]))
    )
    assert [op["f"] for op in ops] == [op["f"] for op in shrunk]
    faults = sum(1 for step in found["steps"] if step[0] != "run")
    assert sum(1 for op in ops if op["f"] not in ("latency", "rename", "heal-all")) < faults


def test_a_schedule_shrunk_to_no_step_runs_as_long_as_the_simulation_took_to_break():
    """A bug that needs no fault: its replay is load alone, until the moment it broke (stretched) and a tail."""
    from targets.kraft.sim.replay import lasting, replayed

    violation = {"seed": 0, "violation": "t=3335ms: liveness: no leader for 2000 ms", "steps": [("crash", 1, 0)]}
    assert replayed({**violation, "shrunk": []}) == [] and replayed(violation) == [("crash", 1, 0)]
    ops, limit_s = real_schedule([], 3, 3.0)
    assert lasting(ops, limit_s, violation, 3.0) == 13.0 and ops[-1] == {"at_s": 13.0, "f": "heal-all", "args": {}}
    ops, limit_s = real_schedule([("run", 0, 9000)], 3, 3.0)
    assert lasting(ops, limit_s, violation, 3.0) == limit_s == 29.0  # (its schedule runs longer already)


def test_a_simulation_that_breaks_before_its_steps_has_no_first_leader_to_put_on_the_real_one(monkeypatch):
    """A node whose core raises at once halts before any step: the schedule is written all the same, with no `rename`."""
    from targets.kraft.core import RaftCore
    from targets.kraft.target import TARGET

    def broken(self, now_ms):
        raise RuntimeError("at once")

    monkeypatch.setattr(RaftCore, "tick", broken)
    assert first_leader(SimSettings(seed=0)) is None
    started = RaftCore.__init__

    def unborn(self, *args):
        started(self, *args)
        raise RuntimeError("as it starts")

    with monkeypatch.context() as patched:  # (a core that raises as the simulation starts it)
        patched.setattr(RaftCore, "__init__", unborn)
        assert first_leader(SimSettings(seed=0)) is None
    verdict = TARGET.simulate({"nodes": 3}, 1, 20, 0, False, False, lambda items: items)
    [found] = verdict["checkers"]["simulation-invariants"]["anomalies"]
    ops, _, _, _ = TARGET.real_schedule({"nodes": 3, "observers": 0}, found)
    assert "halted: RuntimeError: at once" in found["violation"] and "rename" not in [op["f"] for op in ops]
