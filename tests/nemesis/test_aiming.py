"""Faults aimed by role resolve to whoever holds the role when the fault is
made, from what the nodes say of themselves. A leader cut off from the rest
may not know yet that another was elected: it must never be taken for a
follower (a follower restarted while the stale leader is cut off would end
the very window a stale read needs)."""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st

from history.operations import NemesisOp
from nemesis.executor import Nemesis

from .test_confined_clients import Links

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


class Processes(Said):
    """What the nodes say, and processes that stop and go on (a stopped one answers nothing)."""

    def __init__(self, statuses: dict[str, dict]) -> None:
        super().__init__(statuses)
        self.stopped: set[str] = set()

    def status(self, node: str, timeout_s: float | None = None) -> dict | None:
        return None if node in self.stopped else self.statuses[node]

    def pause(self, node: str) -> None:
        self.stopped.add(node)


def test_a_paused_leader_is_still_the_leader_a_cut_aims_at_until_a_later_epoch_leads():
    """A leader paused is still the one its followers follow: a cut aimed at
    the leader (a replayed simulation isolates the leader it has just
    paused) takes its links, by its answer before the pause, where before it
    found no leader and cut nothing; asked for the leader to send a request
    to, the nemesis still names only a node that answers. Once a later
    epoch's leader answers, that one is the leader."""
    statuses = {"n1": {"state": "leader", "epoch": 3}}
    statuses |= {node: {"state": "follower", "epoch": 3} for node in ("n2", "n3")}
    cluster, links = Processes(statuses), Links()
    nemesis = Nemesis(cluster, links, recorder=None, rng=random.Random(0))
    nemesis.perform(NemesisOp(0.0, "pause", {"target": "leader", "only_a_leader": True}))
    assert nemesis.paused == {"n1"} and nemesis.leader() is None
    nemesis.perform(NemesisOp(0.1, "partition", {"topology": "isolate-leader", "only_a_leader": True}))
    assert links.down == {(a, b) for a in cluster.ids for b in cluster.ids if a != b and "n1" in (a, b)}
    statuses["n2"] = {"state": "leader", "epoch": 4}
    assert nemesis.leader(paused_too=True) == "n2"
