"""The novelty search (nemesis/novelty.py) on the simulator, with no
cluster: the same steps as a run's, over the deterministic simulation of
the reference quorum, the nodes' statuses read back before each choice. It
reaches more abstract states than the guided nemesis's turns in the same
time, a seed reproduces its decisions, what it learned carries over, it
piles faults up into sequences, and without priors it makes none of the
planted bugs' recipes."""

from __future__ import annotations

import random
from collections import Counter

from history.faults import BY_NAME
from history.observation import Observation, abstract
from history.operations import NemesisOp
from nemesis import novelty
from nemesis.guided import Guide
from nemesis.novelty import HEAL, MAX_DEPTH, RELEASES, Memory, Search, merged, search_turns
from nemesis.simulated import SimNemesis, play
from nemesis.turns import turns
from targets.kraft.sim.search import SimCluster
from targets.kraft.sim.simulation import SimSettings, Simulation

from .test_guided import INTERVAL_MS, KINDS, TURNS, simulation

LIMIT_S = 2 * TURNS * INTERVAL_MS / 1000
SAMPLE_MS = 100


class Watched(SimNemesis):
    """A simulated nemesis whose cluster's abstract state is sampled as it runs."""

    def __init__(self, cluster) -> None:
        super().__init__(cluster)
        self.sampled: list[str] = []
        self.made: list[str] = []

    def run(self, ms: int) -> None:
        while ms > 0:
            step = min(ms, SAMPLE_MS)
            super().run(step)
            ms -= step
            seen = self.seen()
            self.sampled.append(abstract(seen.rows, self.in_force, seen.gone))

    def apply(self, op) -> None:
        self.made.append(f"{op.f} {sorted(op.args.items())}")
        super().apply(op)


def watched(seed: int) -> Watched:
    base = simulation(seed)
    nemesis = Watched(base.cluster)
    return nemesis


def novelty_run(seed: int, memory: Memory | None = None, priors: bool = False) -> tuple[Watched, Search]:
    nemesis = watched(seed)
    search = Search(Guide(random.Random(seed), KINDS), memory, priors)
    play(nemesis, search_turns(search, INTERVAL_MS / 1000, LIMIT_S))
    return nemesis, search


def guided_run(seed: int) -> Watched:
    nemesis = watched(seed)
    play(nemesis, turns(Guide(random.Random(seed), KINDS), INTERVAL_MS / 1000, LIMIT_S))
    return nemesis


def test_the_search_reaches_more_states_than_the_guided_turns():
    seeds = range(1, 6)
    guided = sum(len(set(guided_run(seed).sampled)) for seed in seeds)
    novelty = sum(len(set(novelty_run(seed)[0].sampled)) for seed in seeds)
    assert novelty >= 1.2 * guided, (novelty, guided)


def test_a_seed_reproduces_the_decisions():
    assert novelty_run(4)[0].made == novelty_run(4)[0].made


def test_what_it_learned_carries_over_and_survives_a_file(tmp_path):
    _, first = novelty_run(2)
    path = tmp_path / "novelty.json"
    first.memory.write(path)
    memory = Memory.read(path)
    assert memory == first.memory
    _, second = novelty_run(3, memory)
    assert sum(second.memory.visits.values()) > sum(first.memory.visits.values())
    assert second.memory.moves > first.memory.moves


def test_faults_pile_up_into_sequences_and_no_recipe_is_made_without_priors():
    deepest, released = 0, 0
    for seed in range(1, 4):
        nemesis, _ = novelty_run(seed)
        in_force: list[str] = []
        for made in nemesis.made:
            f = made.split(" ")[0]
            if f == "heal-all":
                in_force = []
            elif f in RELEASES:
                released += 1
                in_force = [kind for kind in in_force if BY_NAME[kind].recovery != f]
            elif not BY_NAME[f].instant:
                in_force.append(f)
            deepest = max(deepest, len(in_force))
        assert not any("clients" in made for made in nemesis.made)
    assert deepest == MAX_DEPTH and released


def test_an_action_tried_once_is_worth_less_than_one_never_tried_where_it_is():
    """A fresh memory rewards whatever is tried first as highly as anything
    can be rewarded; that must not make the first action the one made again
    each time its state comes back (a run of seed 1 held latency on every
    link for 25 of its 30 s so, its first action after each heal)."""
    guide = Guide(random.Random(1), KINDS)
    calm = Observation({"n1": "leader", "n2": "follower", "n3": "follower"})
    search = Search(guide)
    state = search.state(calm)
    search.step(0.0, calm, 3.0)
    tried = search.last[1]
    search.learn("a state never seen")
    options = search.options(calm)
    untried = [name for name in options if name != tried]
    assert untried
    assert all(
        search.score(state, tried, options.get(tried)) < search.score(state, name, options[name]) for name in untried
    )


def test_every_kind_is_tried_where_it_is_before_a_kind_is_aimed_again(monkeypatch):
    """A kind aimed many ways (a partition: six cells) must not crowd out
    one aimed few (a voter change: two): from a fresh memory, the first
    actions taken in one state are each of another kind."""
    monkeypatch.setattr(novelty, "EPSILON", 0.0)
    guide = Guide(random.Random(2), ["partition", "pause", "kill", "membership"])
    calm = Observation({"n1": "leader", "n2": "follower", "n3": "follower"})
    search = Search(guide)
    kinds = []
    for _ in range(6):  # partition, pause, kill, wipe, shrink, wait
        search.step(0.0, calm, 3.0)
        kinds.append(search.last[1].split("/")[0])
        search.made, search.last = [], None
    assert sorted(kinds) == ["kill", "partition", "pause", "shrink", "wait", "wipe"], kinds


def test_memories_merge_as_the_most_any_of_them_learned():
    """A campaign's runs keep snapshots of one growing memory: merged, they
    are the last one; memories of different campaigns give each key the
    most either saw, the value of the one that tried it most, every move."""
    early = Memory(Counter({"s1": 2}), Counter({"s1\ta": 1}), {"s1\ta": 0.5}, {"s1\ta\ts2"})
    late = Memory(
        Counter({"s1": 5, "s2": 1}),
        Counter({"s1\ta": 3, "s2\tb": 1}),
        {"s1\ta": 0.9, "s2\tb": 0.1},
        {"s1\ta\ts2", "s2\tb\ts1"},
    )
    assert merged([early, late]) == late == merged([late, early])
    other = Memory(Counter({"s1": 4, "s3": 2}), Counter({"s1\ta": 7}), {"s1\ta": -0.2}, {"s3\tc\ts3"})
    both = merged([late, other])
    assert both.visits == Counter({"s1": 5, "s2": 1, "s3": 2})
    assert both.tries == Counter({"s1\ta": 7, "s2\tb": 1}) and both.value == {"s1\ta": -0.2, "s2\tb": 0.1}
    assert both.moves == late.moves | other.moves


def test_a_kind_in_force_may_be_made_again_and_a_voter_change_only_once():
    """With a partition in force, the search may cut other links too (a
    follower deaf to the leader, the leader deaf to another, one orphaned) and pause another node;
    with a voter change in force, no second one is open."""
    guide = Guide(random.Random(1), ["partition", "pause", "membership"])
    seen = Observation({"n1": "leader", "n2": "follower", "n3": "follower"})
    search = Search(guide)
    deaf = search.options(seen)["partition/follower-deaf"]
    assert deaf.args["topology"] == "one-way" and deaf.args["target"] == "follower"
    search.ops(0.0, "partition/follower-deaf", deaf, 3.0)
    again = search.options(seen)
    assert {
        "partition/follower-orphaned",
        "partition/leader-deaf",
        "partition/leader-cut-off",
        "pause/follower",
    } <= set(again)
    assert again["partition/leader-deaf"].args["way"] == "to-leader"
    change = next(name for name, choice in again.items() if choice is not None and choice.f == "membership")
    search.ops(0.0, change, again[change], 3.0)
    assert not any(choice is not None and choice.f == "membership" for choice in search.options(seen).values())


def test_a_fault_on_every_link_is_not_made_again_while_it_holds():
    """Latency on every link, made twice, changes nothing the second time:
    not open again until healed; a partition, aimed anew, stays open."""
    guide = Guide(random.Random(1), ["latency", "partition"])
    seen = Observation({"n1": "leader", "n2": "follower", "n3": "follower"})
    search = Search(guide)
    latency = search.options(seen)["latency/links"]
    search.ops(0.0, "latency/links", latency, 3.0)
    again = search.options(seen)
    assert "latency/links" not in again and "partition/follower-deaf" in again
    search.ops(1.0, HEAL, None, 3.0)
    assert "latency/links" in search.options(seen)


def test_one_kind_may_be_let_go_while_the_rest_hold():
    """A follower paused and the leader cut off: the search may resume the
    paused node alone, the cut still in force, here and in the simulation
    (where a resume used to heal everything)."""
    guide = Guide(random.Random(1), ["partition", "pause", "kill"])
    seen = Observation({"n1": "leader", "n2": "follower", "n3": "follower"})
    search = Search(guide)
    assert not any(name.startswith("release/") for name in search.options(seen))
    ops = [
        search.ops(0.0, name, search.options(seen)[name], 3.0)[0]
        for name in ("pause/follower", "partition/leader-cut-off")
    ]
    options = search.options(seen)
    assert {"release/resume", "release/heal"} <= set(options) and "release/start" not in options
    released = search.ops(1.0, "release/resume", options["release/resume"], 3.0)
    assert released == [NemesisOp(1.0, "resume")] and search.in_force() == ["partition"]
    nemesis = SimNemesis(SimCluster(Simulation(SimSettings(seed=3, nodes=3, check_invariants=False))))
    nemesis.run(2000)
    for op in [*ops, *released]:
        nemesis.apply(op)
    assert not nemesis.cluster.paused and nemesis.cluster.cut and nemesis.in_force == ["partition"]


def test_two_partitions_piled_up_leave_two_leaders_at_once_under_check_quorum():
    """What piling a kind on itself reaches: a follower deaf to its leader
    (its fetches still arrive), then the other follower cut from the leader.
    The deaf one, hearing no answer, votes for the other, whose vote request
    the leader never hears, while the leader still counts the deaf one's
    fetches: for a while two nodes lead, in different epochs, as Raft allows
    (check-quorum on). Either partition alone leaves one leader."""

    def most_leaders(*ops: NemesisOp) -> int:
        nemesis = SimNemesis(
            SimCluster(Simulation(SimSettings(seed=3, nodes=3, check_quorum=True, check_invariants=False)))
        )
        nemesis.run(2000)
        most = 0
        for op in ops:
            nemesis.apply(op)
            for _ in range(300):
                nemesis.run(10)
                most = max(most, len(nemesis.cluster.sim.leaders()))
        return most

    deaf = NemesisOp(0.0, "partition", {"topology": "one-way", "target": "follower", "seed": 1})
    orphans = [NemesisOp(0.4, "partition", {"topology": "orphan", "target": "follower", "seed": s}) for s in range(4)]
    assert most_leaders(deaf) == 1 and all(most_leaders(orphan) == 1 for orphan in orphans)
    assert any(most_leaders(deaf, orphan) == 2 for orphan in orphans)
