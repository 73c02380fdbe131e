"""The KIP-996 scenarios, and Raft's figure 8, as reproducible simulations,
each returning the figure it is about. Tests assert on the figures;
`benchmarks/kip996_scenarios.py` and `benchmarks/commit_rule.py` print
them for many seeds.

All run an idle cluster (no client load): a rejoining node's log is then as
up to date as the leader's, which is the case where only Pre-Vote and the
follower's refusal stand between it and a needless election.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from history.errors import ClusterError, SettingError

from .invariants import InvariantViolation
from .simulation import SimSettings, Simulation

SETTLE_MS = 1500


def _settled(settings: SimSettings) -> tuple[Simulation, str]:
    sim = Simulation(settings)
    sim.run(SETTLE_MS)
    leader = sim.leader()
    if leader is None:
        raise ClusterError(f"seed {settings.seed}: no leader after {SETTLE_MS} ms")
    return sim, leader


def _leader_changes(sim: Simulation, since: int) -> int:
    """Leaderships won after event index `since`."""
    return sum(1 for _, _, event in sim.events[since:] if event["event"] == "transition" and event["state"] == "leader")


def rejoining_follower(settings: SimSettings, isolated_ms: int = 3000, after_ms: int = 2000) -> int:
    """KIP-996's motivation: a follower partitioned for many election timeouts,
    then healed. Returns how many leader elections the rejoin caused."""
    sim, leader = _settled(settings)
    follower = next(node for node in sim.ids if node != leader)
    sim.isolate(follower)
    sim.run(isolated_ms)
    mark = len(sim.events)
    sim.heal()
    sim.run(after_ms)
    return _leader_changes(sim, mark)


def flip_flop(settings: SimSettings, duration_ms: int = 5000) -> int:
    """The 5-node topology of KIP-996's motivation (decentralizedthoughts,
    "Raft liveness under full omission"): with leader 3, server 4 cannot reach
    the leader and server 5 cannot reach server 2; all other links work.
    Returns the leader elections during `duration_ms` of that partial partition."""
    if settings.nodes != 5:
        raise SettingError("nodes", "the flip-flop topology has 5 nodes")
    sim, leader = _settled(settings)
    server2, server4, server5 = [node for node in sim.ids if node != leader][:3]
    for a, b in ((leader, server4), (server2, server5)):
        sim.cut.update({(a, b), (b, a)})
    mark = len(sim.events)
    sim.run(duration_ms)
    return _leader_changes(sim, mark)


def isolated_leader_resigns(settings: SimSettings, limit_ms: int = 5000) -> int | None:
    """Cut the leader off from everyone; returns the milliseconds until it
    resigned (check-quorum), or None if it still leads after `limit_ms`."""
    sim, leader = _settled(settings)
    sim.isolate(leader)
    start = sim.now_ms
    mark = len(sim.events)
    while sim.now_ms - start < limit_ms:
        sim.run(settings.tick_ms)
        for time_ms, node, event in sim.events[mark:]:
            if node == leader and event["event"] == "transition" and event["state"] == "resigned":
                return time_ms - start
    return None


def _count(sim: Simulation, since: int, state: str) -> int:
    return sum(1 for _, _, event in sim.events[since:] if event["event"] == "transition" and event["state"] == state)


def auto_join_growth(settings: SimSettings, down: int = 0, duration_ms: int = 3000) -> dict:
    """KIP-1186's scenario: voters auto-join (`settings.auto_join`, observers
    beyond `settings.nodes`) while `down` of the existing voters are crashed,
    so that the joiner's own fetch is needed to commit its AddRaftVoter. With
    AckWhenCommitted=true (`ack_when_committed_always`) the joiner cannot
    fetch while its request waits, and the leader resigns on check-quorum.

    Returns the resignations and leader elections after the first leader,
    and the voters at the end."""
    sim = Simulation(settings)
    for node in sim.ids[settings.nodes - down : settings.nodes]:
        sim.crash(node)
    sim.run(settings.election_timeout_ms * 3)
    mark = len(sim.events)
    sim.run(duration_ms)
    return {
        "resignations": _count(sim, mark, "resigned"),
        "elections": _count(sim, mark, "leader"),
        "voters": len(sim.voter_set().voters),
    }


def _until(sim: Simulation, done: Callable[[], bool], limit_ms: int = 5000) -> None:
    end = sim.now_ms + limit_ms
    while not done():
        if sim.now_ms >= end:
            raise ClusterError(f"seed {sim.settings.seed}: the scenario stalled at {sim.now_ms} ms")
        sim.run(sim.settings.tick_ms)


def figure_8(settings: SimSettings) -> str | None:
    """Figure 8 of the Raft paper, on 5 idle nodes: the leader L and one
    follower hold a record r the other three lack; those three elect S, cut
    off as it is elected (`Simulation.arm`), so its record of the new epoch
    is on it alone. Healed but S, L or its follower is elected (r makes its
    log the longer) and cut off as it first commits, and S stands again
    with the two that took r from it. Raft's commit rule (a record of an
    earlier epoch commits only under one of the leader's own) keeps r from
    being committed there; without it, S's election overwrites a committed
    record. A fetch answer that carries the new leader's record with r
    (`fetch_max_records` of 2 or more) commits both at once, hiding the
    rule's absence. Returns the invariant broken, or None."""
    if settings.nodes != 5:
        raise SettingError("nodes", "figure 8 has 5 nodes")
    try:
        sim, first = _settled(settings)
        follower, *rest = [node for node in sim.ids if node != first]
        sim.partition({first, follower}, set(rest))
        sim.submit(first, {"op": "append", "value": "r"})
        sim.run(30)
        sim.arm("election")
        _until(sim, lambda: any(node in sim.leaders() for node in rest))
        [elected] = [node for node in rest if node in sim.leaders()]
        sim.heal()
        sim.isolate(elected)
        sim.arm("commit")
        _until(sim, lambda: "commit" not in sim.armed)
        sim.heal()
        sim.isolate(first)
        sim.isolate(follower)
        sim.run(1500)
    except InvariantViolation as broken:
        return str(broken)
    return None


def with_seed(settings: SimSettings, seed: int) -> SimSettings:
    return replace(settings, seed=seed)
