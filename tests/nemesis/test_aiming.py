"""Faults aimed by role resolve to whoever holds the role when the fault is
made, from what the nodes say of themselves. A leader cut off from the rest
may not know yet that another was elected: it must never be taken for a
follower (a follower restarted while the stale leader is cut off would end
the very window a stale read needs)."""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st

from nemesis.executor import Nemesis

STATES = ("leader", "follower", "candidate", "prospective", "unattached", "resigned")


class Said:
    """A cluster that is only what its nodes say of themselves."""

    def __init__(self, statuses: dict[str, dict]) -> None:
        self.statuses = statuses
        self.ids = sorted(statuses)

    def status(self, node: str, timeout_s: float | None = None) -> dict | None:
        return self.statuses[node]


@given(
    states=st.lists(st.sampled_from(STATES), min_size=3, max_size=7),
    epochs=st.data(),
    count=st.integers(1, 3),
    seed=st.integers(0, 2**31 - 1),
)
def test_followers_are_never_a_node_that_says_it_leads_in_any_epoch(states, epochs, count, seed):
    statuses = {f"n{i}": {"state": state, "epoch": epochs.draw(st.integers(1, 5))} for i, state in enumerate(states, 1)}
    nemesis = Nemesis(Said(statuses), links=None, recorder=None, rng=random.Random(seed))
    chosen = nemesis.targets("follower", random.Random(seed), count)
    others = [node for node, status in statuses.items() if status["state"] != "leader"]
    assert len(chosen) == min(count, len(others)) and set(chosen) <= set(others)
    epochs_led = [s["epoch"] for s in statuses.values() if s["state"] == "leader"]
    if epochs_led:  # the leader target is a node that leads in the newest epoch any does
        [leader] = nemesis.targets("leader", random.Random(seed))
        assert statuses[leader] == {"state": "leader", "epoch": max(epochs_led)}
