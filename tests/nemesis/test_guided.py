"""The guided nemesis on the simulator first (fast and deterministic): the
same turns of faults as a run's, applied to the deterministic simulation of
the reference quorum, with the nodes' states read back before each choice.
Guided turns reach more coverage cells than the random schedule's, a seed
reproduces the decisions, and the choices follow the least-tried rule."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from history.observation import Observation
from history.operations import NemesisOp
from nemesis.faults import clock
from nemesis.guided import Guide, repaired
from nemesis.schedule import generate
from nemesis.simulated import SimNemesis, driven
from nemesis.turns import EARLY_S, turns
from targets.kraft.sim.invariants import InvariantViolation
from targets.kraft.sim.search import SimCluster
from targets.kraft.sim.simulation import SimSettings, Simulation, quiesce

KINDS = ["partition", "pause", "kill", "bounce"]
INTERVAL_MS = 1000
TURNS = 10


def simulation(seed: int, **settings) -> SimNemesis:
    nemesis = SimNemesis(
        SimCluster(Simulation(SimSettings(seed=seed, nodes=5, **{"check_invariants": False, **settings})))
    )
    nemesis.run(2000)  # a leader first, as a run waits for one
    return nemesis


def random_turns(seed: int) -> SimNemesis:
    """The random strategy: `splitbrain run`'s seeded schedule, as it is."""
    nemesis = simulation(seed)
    now = 0
    for op in generate(
        random.Random(seed),
        KINDS,
        2 * TURNS * INTERVAL_MS / 1000,
        INTERVAL_MS / 1000,
        5,
        ["isolate", "isolate-leader", "halves", "majorities-ring", "bridge"],
    ):
        nemesis.run(int(op.at_s * 1000) - now)
        now = int(op.at_s * 1000)
        nemesis.apply(op)
    return nemesis


def guided_turns(seed: int, tried: Counter | None = None) -> tuple[SimNemesis, Guide]:
    """The guided strategy's turns (nemesis/turns.py, as `splitbrain run`
    drives them), over as long as the random schedule's."""
    nemesis = simulation(seed)
    guide = Guide(random.Random(seed), KINDS, tried=tried)
    steps = turns(guide, INTERVAL_MS / 1000, 2 * TURNS * INTERVAL_MS / 1000)
    now_ms = 0
    for at_s, op in driven(steps, lambda: (Observation(nemesis.cluster.states()), now_ms / 1000)):  # noqa: B023 - the clock as it reads when called
        nemesis.run(max(0, int(at_s * 1000) - now_ms))
        now_ms = max(now_ms, int(at_s * 1000))
        if op is not None:
            nemesis.apply(op)
    return nemesis, guide


def test_guided_turns_reach_more_cells_than_random_ones():
    seeds = range(1, 6)
    random_cells = sum(len(set(random_turns(seed).cells)) for seed in seeds)
    guided_cells = sum(len(set(guided_turns(seed)[0].cells)) for seed in seeds)
    assert guided_cells >= 1.5 * random_cells, (guided_cells, random_cells)


def test_a_seed_reproduces_the_decisions_and_coverage_carries_over():
    first, guide = guided_turns(3)
    again, _ = guided_turns(3)
    assert first.cells == again.cells
    later, _ = guided_turns(4, tried=guide.tried)
    # A later run of a campaign starts where the earlier one stopped: what it tries first was untried.
    assert later.cells[0] not in guide.tried or guide.tried[later.cells[0]] <= min(guide.tried.values()) + 1


STATES = st.dictionaries(
    st.sampled_from(["n1", "n2", "n3", "n4", "n5"]),
    st.sampled_from(["leader", "follower", "candidate", "prospective", "unattached"]),
    min_size=1,
)


@given(STATES, st.integers(0, 2**32), st.lists(st.sampled_from(KINDS), min_size=1, unique=True))
def test_the_choice_is_always_among_the_least_tried_reachable_cells(states, seed, kinds):
    guide = Guide(random.Random(seed), kinds)
    for _ in range(6):
        seen = Observation(states)
        options = guide.choices(seen)
        least = min((guide.tried[c.cell] for c in options), default=None)
        choice = guide.choose(seen)
        assert (choice is None) == (not options)
        if choice:
            assert guide.tried[choice.cell] - 1 == least
            assert choice.f in kinds and choice.cell[2] == seen.context()


def test_voter_changes_are_guided_as_the_random_schedule_makes_them_then_rejoined():
    guide = Guide(random.Random(1), ["membership", "kill"])
    seen = Observation({"n1": "leader", "n2": "follower", "n3": "follower"})
    wanted = {("wipe", "follower", "alone"), ("shrink", "follower", "alone")}
    assert {c.cell for c in guide.choices(seen) if c.f == "membership"} == wanted
    made = [guide.choose(seen) for _ in range(5)]
    change = next(c for c in made if c.f == "membership")
    ops = guide.ops(3.0, change, 2.0)
    assert ops[0].f == change.cell[0] and ops[0].args["aim"] == "/".join(change.cell)
    assert all(op.args.get("during") == "membership" for op in ops) and all(3.0 <= op.at_s < 5.0 for op in ops)
    assert [op.f for op in guide.undo(5.0, [change])] == ["rejoin", "heal-all"]
    assert [op.f for op in guide.undo(5.0, [c for c in made if c.f == "kill"][:1])] == ["heal-all"]
    # Without a leader and a follower to aim at, no voter change is offered.
    assert not [c for c in guide.choices(Observation({"n1": "candidate"})) if c.f == "membership"]


@given(seed=st.integers(0, 2**31 - 1))
def test_voter_changes_come_first_two_at_once_with_the_leader_stopped_while_they_are_in_flight(seed):
    """Where `membership` is among the faults, the first two turns are its
    two voter changes (the riskiest cells), a lost disk first; a shrink removes two followers at
    once, and the fault made at once beside it stops the leader; a wipe is
    followed by two elections."""
    guide = Guide(random.Random(seed), ["partition", "kill", "bounce", "clock", "membership"])
    seen = Observation({"n1": "leader", "n2": "follower", "n3": "follower", "n4": "follower", "n5": "follower"})
    first, second = guide.choose(seen), guide.choose(seen)
    assert (first.cell[0], second.cell[0]) == ("wipe", "shrink") and {first.f, second.f} == {"membership"}
    wipe, shrink = first, second
    [op] = guide.ops(3.0, shrink, 2.0)
    assert op.f == "shrink" and op.args["count"] == 2
    # A wipe: the leader killed, then the next one too, before the nodes are started again.
    assert [(op.f, op.args.get("target")) for op in guide.ops(3.0, wipe, 3.0)] == [
        ("wipe", "follower"),
        ("kill", "leader"),
        ("kill", "leader"),
        ("start", None),
    ]
    beside = guide.overlap(seen, [shrink], at_once=True)
    assert beside.cell[:2] in {("kill", "leader"), ("bounce", "leader")} and beside.args["target"] == "leader"
    assert guide.choose(seen).f != "membership"  # both tried: the other cells' turn


@given(seed=st.integers(0, 2**31 - 1))
def test_a_cut_off_leaders_clock_is_set_back_or_slowed_at_once_and_nothing_else_is_risky(seed):
    """With the leader cut off, the risky second fault is a clock set back or
    slowed on that leader (it holds on to leadership past the followers'
    election: what a lease or a read from local state gets wrong); with a
    follower cut off, nothing is risky enough to be made at once."""
    guide = Guide(random.Random(seed), ["partition", "pause", "kill", "clock"])
    seen = Observation({"n1": "leader", "n2": "follower", "n3": "follower"})
    first = next(c for c in guide.choices(seen) if c.cell[1] == "leader-cut-off")
    second = guide.overlap(seen, [first], at_once=True)
    assert second.cell == ("clock", "leader", "partition") and second.args["target"] == "leader"
    assert clock.offset_ms(second.args, 1.0) <= -900  # set back 5 s, or a tenth of its speed: past the interval
    again = guide.overlap(seen, [first], at_once=True)  # whenever the leader is cut off, tried or not
    assert again.cell == second.cell and clock.offset_ms(again.args, 1.0) <= -900
    third = guide.overlap(seen, [first, second])
    assert third.cell[2] == "clock+partition" and third.f not in ("partition", "clock")  # both in force, another kind
    orphan = next(c for c in guide.choices(seen) if c.cell[1] == "follower-orphaned")
    assert guide.overlap(seen, [orphan], at_once=True) is None and guide.overlap(seen, [orphan]) is not None


@given(seed=st.integers(0, 2**31 - 1))
def test_after_the_leader_is_stopped_a_follower_is_restarted_its_vote_must_survive(seed):
    """With the leader killed (an election follows), the riskiest second fault
    is a follower bounced or restarted: its vote in the new epoch must survive."""
    guide = Guide(random.Random(seed), ["kill", "pause", "bounce", "restart"])
    seen = Observation({"n1": "leader", "n2": "follower", "n3": "follower"})
    first = next(c for c in guide.choices(seen) if c.cell[:2] == ("kill", "leader"))
    assert guide.overlap(seen, [first], at_once=True) is None  # not before the election: after it
    second = guide.overlap(seen, [first])
    assert second.cell[:2] in {("bounce", "follower"), ("restart", "follower")} and second.args["target"] == "follower"


@pytest.mark.parametrize("bugs", [frozenset(), frozenset({"ack-before-fsync"})])
def test_a_leaders_power_loss_comes_while_a_bare_majority_holds_its_records(bugs):
    """A leader's power loss is made with a minority of followers killed
    first and the rest paused at the loss: the leader and the killed
    followers elect without what the paused ones hold. The correct leader
    fsynced what it counted, so nothing committed is lost; a leader that
    counted unfsynced records (ack-before-fsync) loses committed ones,
    in most seeds."""
    seen = Observation({"n1": "leader", "n2": "follower", "n3": "follower", "n4": "follower", "n5": "follower"})
    broken = 0
    for seed in range(10):
        guide = Guide(random.Random(seed), ["pause", "kill", "lose-unfsynced"], voters=5)
        choice = guide.choose(seen)
        assert choice.cell[:2] == ("lose-unfsynced", "leader")  # the riskiest cell
        ops = guide.ops(0.0, choice, 1.0)
        assert guide.held_s(choice, 1.0) == 2.0
        assert [(op.f, op.args.get("count")) for op in ops] == [
            ("kill", 2),
            ("pause", 2),
            ("lose-unfsynced", None),
            ("start", None),
        ]
        nemesis = simulation(seed, bugs=bugs, check_invariants=True)
        ran = 0
        try:
            for op in [*ops, NemesisOp(guide.held_s(choice, 1.0), "heal-all")]:  # held for the election after
                nemesis.run(int(op.at_s * 1000) - ran)
                ran = int(op.at_s * 1000)
                nemesis.apply(op)
            quiesce(nemesis.cluster.sim)
        except InvariantViolation:
            broken += 1
    assert broken == 0 if not bugs else broken >= 5


@pytest.mark.parametrize("bugs", [frozenset(), frozenset({"prevote-always"})])
def test_the_first_turn_mutes_the_leader_and_jumps_a_followers_clock_ahead_at_once(bugs):
    """With partitions and clock faults among the faults, the first turn
    mutes the leader, and at once jumps a follower's clock ahead: that
    follower gives up on the leader first, its log as long as the others'
    (none gets more records), and asks them for pre-votes while they still
    follow. The correct node refuses them; a node that grants them
    (prevote-always) is caught in every seed, within the turn."""
    caught = 0
    for seed in range(1, 6):
        nemesis = simulation(seed, bugs=bugs, check_invariants=True)
        guide = Guide(
            random.Random(seed), ["partition", "pause", "kill", "bounce", "lose-unfsynced", "clock"], voters=5
        )
        first = guide.choose(Observation(nemesis.cluster.states()))
        assert first.cell[:2] == ("partition", "leader-mute")
        try:
            nemesis.apply(guide.op(0, first))
            nemesis.run(int(EARLY_S * 1000))
            beside = guide.overlap(Observation(nemesis.cluster.states()), [first], at_once=True)
            assert beside.cell[:2] == ("clock", "follower") and clock.offset_ms(beside.args, 0.0) >= 2000
            nemesis.apply(guide.op(0, beside))
            nemesis.run(500)  # well within the others' fetch timeout
        except InvariantViolation as violation:
            assert "pre-vote rule" in str(violation)
            caught += 1
            continue
        nemesis.run(INTERVAL_MS * 2)  # the correct node, through the rest of the turn, breaks no rule
        nemesis.apply(NemesisOp(0, "heal-all"))
        quiesce(nemesis.cluster.sim)
    assert caught == (5 if bugs else 0)


@given(st.integers(0, 2**32), st.integers(3, 7), st.integers(0, 4))
def test_files_are_damaged_on_at_most_a_minority_not_yet_repaired(seed, voters, damaged):
    """A corrupt file or a full disk may leave a node without records it
    acknowledged: a quorum survives that on a minority of its voters, so the
    guide offers those faults only while fewer than a minority are damaged."""
    guide = Guide(random.Random(seed), ["corrupt", "disk-full", "kill"], voters=voters)
    nodes = [f"n{i}" for i in range(1, voters + 1)]
    seen = Observation(
        {node: "leader" if node == "n1" else "follower" for node in nodes}, damaged=frozenset(nodes[:damaged])
    )
    offered = {choice.f for choice in guide.choices(seen)} | {guide.choose(seen).f}
    assert "kill" in offered
    assert ("corrupt" in offered and "disk-full" in offered) == (damaged < (voters - 1) // 2)
    assert not {"corrupt", "disk-full"} & offered or damaged < (voters - 1) // 2


def row(at: int, state: str, offset: int | None = None, leader: str | None = None) -> dict:
    return {"time_ns": at, "state": state, "offset": offset, "leader": leader}


def test_a_damaged_node_is_repaired_once_seen_since_following_a_leader_level_with_its_log():
    damaged_at = {"n2": 100}
    following = {"n1": row(150, "leader", 1000), "n2": row(150, "follower", 990)}
    assert repaired(damaged_at, following) == {"n2"}
    # What it said before the damage, behind the longest log, or with no leader: not yet.
    assert repaired(damaged_at, {**following, "n2": row(90, "follower", 1000)}) == set()
    assert repaired(damaged_at, {**following, "n2": row(150, "follower", 900)}) == set()
    assert repaired(damaged_at, {**following, "n2": row(150, "unattached", 1000)}) == set()
    assert repaired(damaged_at, {**following, "n1": row(150, "candidate", 1000)}) == set()
    # Following a leader with a log near the longest, but no leader's answer since its restart: no high watermark.
    unanswered = {**following, "n2": {**row(150, "follower", 990), "hwm": 0}}
    assert repaired(damaged_at, unanswered) == set()
    assert repaired(damaged_at, {**unanswered, "n2": {**row(150, "follower", 990), "hwm": 985}}) == {"n2"}
    # A status with no offsets that names the leader, not its state: following it is enough.
    assert repaired(damaged_at, {"n1": row(150, None, leader="n1"), "n2": row(150, None, leader="n1")}) == {"n2"}
