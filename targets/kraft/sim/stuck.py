"""The simulator's liveness invariant while faults are in force: a majority
of the voters up and heard must not stand long without a leader.

The invariant at a schedule's end (`simulation.settle`) sees a cluster that
cannot elect once everything is healed; it cannot see one that is stuck
while some node is held: a resigned leader that never stands again while
its one live peer waits on it is healed the moment the held node comes
back and leads. A real run's `availability` measures the same state
(`stuck_ms`); here it is an invariant, since the simulator knows exactly
which nodes are up, heard and clean.

A voter counts as up once it has been running, unpaused, heard by and
hearing a majority of the voters, on the disk the voter set names it by
(not wiped since) and clean (not catching up after a power loss, not
recovered uncleanly) for SETTLE_FETCH_TIMEOUTS fetch timeouts; the up
voters that all hear one another must be a majority
(`checkers.availability.largest_connected`: a leader and a follower cut
from each other while the rest are held is Raft's known partial
partition, where pre-vote and check-quorum may leave no leader, not a
fault of the node). The watch holds only while the network is calm (no
drops, the usual delays, every clock true) and no node anywhere is
unclean (an unclean voter's grant makes a candidate need every voter, so
a correct cluster may wait for the held one). Then a majority of up
voters with no up node leading for STUCK_FETCH_TIMEOUTS fetch timeouts
breaks it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from history.cuts import largest_connected, unheard

if TYPE_CHECKING:
    from .simulation import Simulation

SETTLE_FETCH_TIMEOUTS = 2
# The correct core leaves the state within about two fetch timeouts (a
# pre-vote refused by a peer that still hears the leader, then another).
STUCK_FETCH_TIMEOUTS = 10


class StuckWatch:
    """Called every tick; remembers since when each voter is up, and since
    when the cluster is stuck."""

    def __init__(self) -> None:
        self.up_since: dict[str, int] = {}
        self.stuck_since: int | None = None

    def tick(self, sim: Simulation) -> None:
        now, fetch_timeout = sim.now_ms, sim.settings.fetch_timeout_ms
        cores = {node: core for node, core in sim.nodes.items() if core is not None and node not in sim.paused}
        newest = max(cores.values(), key=lambda core: core.hwm, default=None)
        if newest is None:
            self.up_since.clear()
            self.stuck_since = None
            return
        voter_set = newest.voters
        voters = voter_set.ids
        heard = [node for node in cores if not unheard(sim.cut, node, voters)]
        live = {node for node in heard if _clean(sim, node)}
        self.up_since = {node: self.up_since.get(node, now) for node in live}
        # A voter whose disk was lost since (wiped) no longer votes under the identity the set names.
        settled = [
            n
            for n in voters
            if now - self.up_since.get(n, now) >= SETTLE_FETCH_TIMEOUTS * fetch_timeout
            and sim.disks[n].directory_id == voter_set.directory_of(n)
        ]
        up = largest_connected(settled, sim.cut)
        leading = any(cores[node].state.name == "leader" for node in heard)
        if leading or 2 * len(up) <= len(voters) or not _calm(sim):
            self.stuck_since = None
            return
        if self.stuck_since is None:
            self.stuck_since = now
        elif now - self.stuck_since >= STUCK_FETCH_TIMEOUTS * fetch_timeout:
            sim.monitor.fail(
                f"liveness: {', '.join(up)}, a majority of the voters up and heard, "
                f"had no leader for {now - self.stuck_since} ms"
            )


def _clean(sim: Simulation, node: str) -> bool:
    core = sim.nodes[node]
    return core is not None and not (core.catching_up or core.unclean or sim.disks[node].lost)


def _calm(sim: Simulation) -> bool:
    """No drops, the usual delays, every clock true, and no node unclean."""
    usual = (sim.settings.min_delay_ms, sim.settings.max_delay_ms)
    return (
        sim.drop_rate == 0
        and sim.delay_ms == usual
        and not any(sim.clock_ms.values())
        and not any(core is not None and core.unclean for core in sim.nodes.values())
    )
