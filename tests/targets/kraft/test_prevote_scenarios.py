"""KIP-996's scenarios over the simulated cluster, each across seeds: what
Pre-Vote and check-quorum buy, and what the planted `prevote-always` loses."""

from __future__ import annotations

from targets.kraft.messages import EndQuorumEpoch
from targets.kraft.sim.scenarios import flip_flop, isolated_leader_resigns, rejoining_follower, with_seed
from targets.kraft.sim.search import SETTLE_MS
from targets.kraft.sim.simulation import SimSettings, Simulation

SEEDS = range(12)
# What the bug costs in elections; the monitor's Pre-Vote rule, which it breaks, is off for these.
PREVOTE_ALWAYS = frozenset(["prevote-always"])


def test_rejoining_follower_does_not_disturb_the_leader_with_pre_vote():
    assert [rejoining_follower(with_seed(SimSettings(), seed)) for seed in SEEDS] == [0] * len(SEEDS)


def test_rejoining_follower_forces_an_election_without_pre_vote():
    changes = [rejoining_follower(with_seed(SimSettings(pre_vote=False), seed)) for seed in SEEDS]
    assert all(change >= 1 for change in changes), changes


def test_rejoining_follower_forces_elections_when_followers_grant_pre_votes():
    changes = [
        rejoining_follower(with_seed(SimSettings(bugs=PREVOTE_ALWAYS, check_invariants=False), seed)) for seed in SEEDS
    ]
    assert sum(1 for change in changes if change) >= 2, changes


def test_flip_flop_topology_is_stable_with_pre_vote():
    assert [flip_flop(with_seed(SimSettings(nodes=5), seed)) for seed in SEEDS] == [0] * len(SEEDS)


def test_flip_flop_topology_flips_leadership_without_pre_vote():
    changes = [flip_flop(with_seed(SimSettings(nodes=5, pre_vote=False), seed)) for seed in SEEDS]
    assert all(change >= 2 for change in changes), changes


def test_flip_flop_topology_loses_its_leader_when_followers_grant_pre_votes():
    changes = [
        flip_flop(with_seed(SimSettings(nodes=5, bugs=PREVOTE_ALWAYS, check_invariants=False), seed)) for seed in SEEDS
    ]
    assert all(change >= 1 for change in changes), changes


def test_isolated_leader_resigns_within_the_fetch_timeout():
    for nodes in (3, 5):
        settings = SimSettings(nodes=nodes)
        delays = [isolated_leader_resigns(with_seed(settings, seed)) for seed in SEEDS]
        assert all(d is not None and d <= settings.fetch_timeout_ms + settings.tick_ms for d in delays), delays


def test_isolated_leader_keeps_leading_without_check_quorum():
    delays = [isolated_leader_resigns(with_seed(SimSettings(check_quorum=False), seed), 2000) for seed in SEEDS]
    assert delays == [None] * len(SEEDS)


def notices_sent(sim: Simulation) -> list[EndQuorumEpoch]:
    """The resignation notices `sim` sends from now on, as they are sent."""
    sent: list[EndQuorumEpoch] = []
    send = sim._send

    def recorded(msg) -> None:
        if isinstance(msg, EndQuorumEpoch):
            sent.append(msg)
        send(msg)

    sim._send = recorded  # type: ignore[method-assign]
    return sent


def test_a_resignation_notice_lost_to_a_cut_is_sent_again_once_healed():
    """KRaft's resigned leader sends EndQuorumEpoch again, a request timeout
    apart, to each voter that has not answered it;
    ours sent it once, so a notice lost to a cut was never seen."""
    resent = []
    for seed in SEEDS:
        sim = Simulation(with_seed(SimSettings(nodes=3), seed))
        sim.run(SETTLE_MS)
        leader = sim.leader()
        deaf, told = sorted(set(sim.ids) - {leader})
        sent = notices_sent(sim)
        sim.cut.add((leader, deaf))
        core = sim.nodes[leader]
        core.resign(sim.node_time(leader))
        sim._drain(core)
        sim.run(sim.settings.tick_ms)
        sim.heal()
        before = len(sent)
        sim.run(core.config.request_timeout_ms + sim.settings.tick_ms)
        # Sent again to the voter it missed alone (unless an election ended the resignation first).
        assert {msg.dst for msg in sent[before:]} <= {deaf}, seed
        resent.append(len(sent) - before)
    assert sum(resent) >= len(SEEDS) // 2, resent
