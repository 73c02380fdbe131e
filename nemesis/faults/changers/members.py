"""Member changes as an etcd operator makes them (`Capabilities.member_changes`):
a member is removed, or lost with its disk; it comes back only as a new
member, added as a learner and promoted once it has caught up, never by
restarting it on a wiped data directory (etcd panics or votes twice then).

Each change is an operation of the nemesis process in the history: f
`remove-member`, `add-learner` or `promote`, value `{"node", "id"}`, then
`ok` with the epoch, `fail` with the refusal, or `info` when no answer came.
A removed node is down until `rejoin` adds it back (plain `start` leaves it
alone), and every run ends with each node a voting member again.
"""

from __future__ import annotations

import random
import time
from typing import Any

from history.errors import ClusterError
from history.schema import NEMESIS_PROCESS

from . import Changer

ANSWER_TIMEOUT_S = 3.0
REJOIN_TIMEOUT_S = 20.0
RETRY_S = 1.0  # etcd refuses changes until every member has been connected 5 s
UNHEALTHY_RETRY_S = 8.0


class MemberChanger(Changer):
    """The nemesis making changes through a target's `MemberChanges` (targets/interface.py), and recording them."""

    def view(self) -> tuple[str, dict[str, dict[str, Any]]]:
        """(leader, {node: member}) as the leader lists its members (a leader
        is waited for, as long as an answer)."""
        deadline = time.monotonic() + ANSWER_TIMEOUT_S
        while (leader := self.nemesis.leader()) is None and time.monotonic() < deadline:
            time.sleep(RETRY_S)
        listed = self.target.members(self.cluster.client[leader], ANSWER_TIMEOUT_S) if leader else None
        if listed is None:
            raise ClusterError("no leader to list the members")
        by_peer = {self.cluster.raft_address(node): node for node in self.cluster.ids}
        return leader, {by_peer[m["peer"]]: m for m in listed if m["peer"] in by_peer}

    def change(self, leader: str, f: str, node: str, **change: Any) -> dict[str, Any]:
        """Send one change to `leader`; record and return its outcome row."""
        value = {"node": node, **({"id": change["id"]} if "id" in change else {})}
        self.recorder.record(NEMESIS_PROCESS, "invoke", f, value=value, node=leader)
        answer = self.target.change_members(
            self.cluster.client[leader], {"op": f.removesuffix("-member"), **change}, ANSWER_TIMEOUT_S
        )
        row: dict[str, Any]
        if answer is None:
            row = self.recorder.record(NEMESIS_PROCESS, "info", f, value=value, node=leader, error="no answer")
        elif "error" in answer:
            row = self.recorder.record(NEMESIS_PROCESS, "fail", f, value=value, node=leader, error=answer["error"])
        else:
            epoch = answer["epoch"]
            row = self.recorder.record(
                NEMESIS_PROCESS, "ok", f, value={**value, "id": answer["id"]}, node=leader, epoch=epoch
            )
        return row

    def remove(self, node: str) -> None:
        """Remove `node` from the members (it stops itself), and take it down.
        etcd refuses while a member has been connected for less than 5 s
        ("unhealthy cluster"): that is retried; any other refusal leaves the
        node as it was, and raises."""
        deadline = time.monotonic() + UNHEALTHY_RETRY_S
        while True:
            leader, members = self.view()
            if node not in members:
                break
            if node == leader:
                raise ClusterError(f"{node} leads: remove a follower")
            row = self.change(leader, "remove-member", node, id=members[node]["id"])
            if row["type"] == "ok":
                break
            if "unhealthy" not in str(row.get("error")) or time.monotonic() > deadline:
                raise ClusterError(f"{node} was not removed: {row.get('error')}")
            time.sleep(RETRY_S)
        self.nemesis.removed.add(node)  # first: whatever happens next, `rejoin` adds it back
        self.nemesis.paused.discard(node)
        self.nemesis.down.discard(node)
        self.cluster.kill(node)

    def shrink(self, count: int, rng: random.Random, only: list[str] | None = None) -> list[str]:
        """Remove `count` live voting followers, one after another (or the members of `only`)."""
        leader, members = self.view()
        if only is not None:
            chosen = sorted(n for n in members if n in only)
        else:
            live = set(self.nemesis.live())
            followers = sorted(n for n, m in members.items() if n != leader and n in live and not m["learner"])
            chosen = sorted(rng.sample(followers, min(count, len(followers))))
        for node in chosen:
            self.remove(node)
        return chosen

    def wipe(self, nodes: list[str]) -> list[str]:
        """A disk lost: the member removed (as an operator replacing the disk
        must), its data directory emptied; `rejoin` adds it as a new member."""
        for node in nodes:
            self.remove(node)
            self.cluster.wipe(node)
        return nodes

    def rejoin(self, only: list[str] | None = None) -> list[str]:
        """Every removed node (of `only`, if given) a voting member again:
        wiped, added as a learner, started as a joiner, promoted once it has caught up."""
        touched = []
        for node in sorted(n for n in self.nemesis.removed if only is None or n in only):
            deadline = time.monotonic() + REJOIN_TIMEOUT_S
            while time.monotonic() < deadline and not self._step(node):
                time.sleep(RETRY_S)
            touched.append(node)
        return touched

    def _step(self, node: str) -> bool:
        """One step towards `node` voting again; True when it does."""
        try:
            leader, members = self.view()
        except ClusterError:
            return False
        member = members.get(node)
        if member is None:
            if self.cluster.running(node):
                self.cluster.kill(node)
            self.cluster.wipe(node)
            self.change(leader, "add-learner", node, peer=self.cluster.raft_address(node))
            return False
        if not member["learner"] and not self.cluster.running(node):  # its removal went unanswered
            self.remove(node)
            return False
        if not self.cluster.running(node):
            self.cluster.joining[node] = {n: self.cluster.raft_address(n) for n in members}
            self.cluster.start(node)
            return False
        if member["learner"]:
            self.change(leader, "promote", node, id=member["id"])
            return False
        self.nemesis.removed.discard(node)
        return True
