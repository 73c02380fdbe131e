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

from checkers.abstract_state import abstract
from nemesis.guided import Guide
from nemesis.novelty import MAX_DEPTH, Memory, Search, merged, search_turns
from nemesis.turns import turns
from targets.kraft.sim_search import SimNemesis, play

from .test_guided import INTERVAL_MS, KINDS, TURNS, simulation

LIMIT_S = 2 * TURNS * INTERVAL_MS / 1000
SAMPLE_MS = 100


class Watched(SimNemesis):
    """A simulated nemesis whose cluster's abstract state is sampled as it runs."""

    def __init__(self, sim) -> None:
        super().__init__(sim)
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
    nemesis = Watched(base.sim)
    nemesis.load = base.load
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
    deepest = 0
    for seed in range(1, 4):
        nemesis, search = novelty_run(seed)
        deepest = max(deepest, max(state.split(" | ")[1].count(",") + 1 for state in search.path if "| -" not in state))
        assert not any("clients" in made for made in nemesis.made)
    assert deepest == MAX_DEPTH


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
