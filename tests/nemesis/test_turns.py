"""The guided nemesis's timing (nemesis/turns.py) with no cluster: whatever
the nodes say, the steps keep time, every turn's faults are undone before
a quiet interval and the next turn, the run ends healed at its time limit,
and a seed with the same observations gives the same steps."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from history.observation import Observation
from nemesis.guided import Guide
from nemesis.turns import SETTLE_S, turns

ROLES = st.sampled_from(["leader", "follower", "candidate", "unattached"])
VIEWS = st.lists(st.dictionaries(st.sampled_from(["n1", "n2", "n3"]), ROLES, min_size=1), min_size=1, max_size=8)
KINDS = ["partition", "pause", "kill", "bounce", "restart"]


def steps(seed: int, views: list[dict], interval_s: float, limit_s: float, late_s: float = 0.0) -> list[tuple]:
    """Every step, each answered with the next view (round and round) and a
    clock that runs `late_s` behind each step's time (a fault slow to make)."""
    guide = Guide(random.Random(seed), KINDS)
    made, generator, k = [], turns(guide, interval_s, limit_s), 0
    step = next(generator)
    while True:
        made.append(step)
        k += 1
        try:
            step = generator.send((Observation(views[k % len(views)]), step[0] + late_s))
        except StopIteration:
            return made


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32), VIEWS, st.sampled_from([1.0, 1.5, 3.0]), st.integers(3, 40), st.sampled_from([0.0, 2.0]))
def test_turns_keep_time_and_end_healed(seed, views, interval_s, limit_s, late_s):
    made = steps(seed, views, interval_s, limit_s, late_s)
    times = [at for at, _ in made]
    first = min(SETTLE_S, interval_s)
    assert times == sorted(times) and times[0] == (first if first + interval_s <= limit_s else limit_s)
    assert made[-1][0] == limit_s and made[-1][1].f == "heal-all"
    faults = [(at, op) for at, op in made if op is not None]
    in_force, healed_at = False, None
    for at, op in faults:
        if op.f == "heal-all":
            in_force, healed_at = False, at
        elif not in_force:  # a turn's first fault: a quiet interval since the last turn was healed
            assert healed_at is None or at >= healed_at + interval_s - 1e-9, (healed_at, at)
            in_force = True
    assert not in_force


def test_a_seed_and_the_same_observations_give_the_same_steps():
    views = [{"n1": "leader", "n2": "follower", "n3": "follower"}, {"n1": "candidate", "n2": "follower"}]
    assert steps(7, views, 1.5, 30) == steps(7, views, 1.5, 30)
    assert steps(7, views, 1.5, 30) != steps(8, views, 1.5, 30)
