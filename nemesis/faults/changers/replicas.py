"""Replica changes as a NATS operator makes them (`Capabilities.replica_changes`):
the workload's stream scaled down to fewer replicas, then back up
(`nats stream edit --replicas`). The servers stay up and in the cluster;
the system chooses which replicas go (their copies are deleted) and where
the new ones come, and a new replica catches up from the stream's leader
(a snapshot, then what follows it). So `membership`'s recipes read here as:

- `shrink` (count followers removed at once): the stream scaled down by
  `count` replicas, to two at the least: at one a stream leaves Raft
  altogether, and scaled up again it is a new group whose terms start
  again at 1 (its elections would read as votes cast twice in one term);
- `wipe` (a follower's disk lost): the stream scaled off one replica, as an
  operator replacing a disk must first, its copy gone with it;
- `rejoin`: the stream scaled back to the replicas the run asked for, and
  done once every replica is current again.

Like an operator, the nemesis scales a stream down only once it has a
leader and every replica is current (`settled`), and a rejoin is done
only once the new replicas have caught up. NATS scales down by keeping
the leader it finds and then the servers it believes online (2.9.10's
`jsClusteredStreamUpdateRequest`), so a stream scaled down while it has no
leader and a server is away can keep one replica however many were
asked, out of Raft; and a replica scaled off while the one just added
has not caught up leaves two of three with no history.

Each change is an operation of the nemesis process in the history: f
`scale-replicas`, value `{"replicas": N}`, then `ok` with the servers that
hold a replica in the answer (`peers`), `fail` with the refusal, or `info`
when no answer came. A scaled-down stream counts as a fault in force, and
every run ends with the replicas it began with.
"""

from __future__ import annotations

import random
import time
from typing import Any

from history.errors import ClusterError
from history.schema import NEMESIS_PROCESS

from . import Changer

ANSWER_TIMEOUT_S = 5.0
REJOIN_TIMEOUT_S = 30.0
SETTLE_TIMEOUT_S = 30.0
RETRY_S = 1.0
LEAST = 2  # replicas a scaled-down stream keeps: its Raft group, and its terms, go on


class ReplicaChanger(Changer):
    """The nemesis making changes through a target's `ReplicaChanges` (targets/interface.py), and recording them."""

    def __init__(self, nemesis: Any) -> None:
        super().__init__(nemesis)
        self.wanted = int(nemesis.settings.get("replicas") or len(nemesis.cluster.ids))

    def asked(self) -> str:
        """The server to ask: the leader where it is live, else any live one."""
        live = self.nemesis.live()
        leader = self.nemesis.leader()
        node = leader if leader in live else (live[0] if live else None)
        if node is None:
            raise ClusterError("no live server to ask for a replica change")
        return str(node)

    def settled(self, replicas: int) -> bool:
        """Whether the stream has a leader and `replicas` current replicas
        (the leader's among them), asked again until SETTLE_TIMEOUT_S."""
        deadline = time.monotonic() + SETTLE_TIMEOUT_S
        while True:
            current = self.target.current_replicas(
                self.cluster.client[self.asked()], self.nemesis.workload, ANSWER_TIMEOUT_S
            )
            if current is not None and len(current) >= replicas:
                return True
            if time.monotonic() > deadline:
                return False
            time.sleep(RETRY_S)

    def change(self, replicas: int) -> tuple[dict[str, Any], list[str]]:
        """Ask a live server (the leader where there is one) for `replicas`
        replicas; record the outcome, and return its row and the servers the
        answer names as holding a replica."""
        node = self.asked()
        value = {"replicas": replicas}
        self.recorder.record(NEMESIS_PROCESS, "invoke", "scale-replicas", value=value, node=node)
        answer = self.target.change_replicas(
            self.cluster.client[node], self.nemesis.workload, replicas, ANSWER_TIMEOUT_S
        )
        if answer is None:
            row = self.recorder.record(
                NEMESIS_PROCESS, "info", "scale-replicas", value=value, node=node, error="no answer"
            )
            return row, []
        if "error" in answer:
            row = self.recorder.record(
                NEMESIS_PROCESS, "fail", "scale-replicas", value=value, node=node, error=answer["error"]
            )
            return row, []
        peers = list(answer["peers"])
        return self.recorder.record(
            NEMESIS_PROCESS, "ok", "scale-replicas", value={**value, "peers": peers}, node=node
        ), peers

    def shrink(self, count: int, rng: random.Random, only: list[str] | None = None) -> list[str]:
        """The stream scaled down by `count` replicas (by as many as `only`
        names), to two at the least (one would make it a new Raft group on
        its way back); the servers it left, as far as the answer says."""
        fewer = max(LEAST, self.wanted - (len(only) if only is not None else count))
        if fewer >= self.wanted:
            return []
        if not self.nemesis.scaled_down and not self.settled(self.wanted):
            raise ClusterError(f"the stream had no leader and {self.wanted} current replicas: not scaled down")
        self.nemesis.scaled_down = True  # first: whatever happens next, `rejoin` scales back
        row, peers = self.change(fewer)
        if row["type"] == "fail":
            raise ClusterError(f"the stream was not scaled to {fewer} replicas: {row.get('error')}")
        left = sorted(node for node in self.cluster.ids if peers and node not in peers)
        self.nemesis.scaled_off.update(left)
        return left

    def wipe(self, nodes: list[str]) -> list[str]:
        """A replica's disk lost: the stream scaled off one replica (the system
        chooses which, so the answer names the servers that lost theirs)."""
        return self.shrink(len(nodes), random.Random(0))

    def rejoin(self, only: list[str] | None = None) -> list[str]:
        """The stream back to the replicas the run began with (retried while
        the cluster has no leader to take it); the servers it had left, as
        far as the answers said (the system places the new replicas, and an
        answer may not name them yet), once every replica is current."""
        if not self.nemesis.scaled_down:
            return []
        deadline = time.monotonic() + REJOIN_TIMEOUT_S
        while True:
            row, peers = self.change(self.wanted)
            if row["type"] == "ok":
                left = sorted(self.nemesis.scaled_off)
                self.nemesis.scaled_down = False
                self.nemesis.scaled_off.clear()
                if not self.settled(self.wanted):
                    raise ClusterError(f"the stream was scaled back, but not all {self.wanted} replicas caught up")
                return left
            if time.monotonic() > deadline:
                raise ClusterError(f"the stream was not scaled back to {self.wanted} replicas: {row.get('error')}")
            time.sleep(RETRY_S)
