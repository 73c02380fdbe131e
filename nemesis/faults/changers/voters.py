"""Voter changes as the operator makes them: AddRaftVoter and RemoveRaftVoter
sent to the leader's client port, each recorded in the history as its own
operation of the nemesis process (f `add-voter` / `remove-voter`, value
`{"node", "directory_id", "ack_when_committed"}`, then `ok` with the offset
and epoch of the voters record, `fail` with the leader's refusal, or `info`
when no answer came).

`shrink` removes one or two followers at once (two requests in one read of
the leader: only a leader that takes a second change before the first
commits accepts both); `rejoin` gives the cluster back every node that runs,
under its current directory id: a wiped node's stale identity is removed
and its new one added in the same breath (a correct leader refuses the add
until the removal commits, and it is sent again).
"""

from __future__ import annotations

import random
import time
from typing import Any

from history.errors import ClusterError
from history.schema import NEMESIS_PROCESS

from . import Changer

ANSWER_TIMEOUT_S = 3.0
REJOIN_TIMEOUT_S = 10.0
# Refusals that pass: the leader is busy with a change, new, or the replica has not fetched yet.
RETRYABLE = {"change-in-progress", "leader-not-ready", "replica-not-fetching", "not-leader"}


class VoterChanger(Changer):
    """The nemesis making changes through a target's `VoterChanges` (targets/interface.py), and recording them."""

    def leader_view(self) -> tuple[str, dict[str, str | None]] | None:
        """(leader, its voter set in force as {node: directory id})."""
        leader = self.nemesis.leader()
        status = self.cluster.status(leader) if leader else None
        if not status:
            return None
        return leader, {node: directory for node, directory in status.get("voters", [])}

    def change(self, leader: str, changes: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Send `changes` to `leader` together; record and return each outcome row."""
        for change in changes:
            self.recorder.record(NEMESIS_PROCESS, "invoke", change["op"], value=_value(change), node=leader)
        try:
            answers = self.cluster.target.change_voters(self.cluster.client[leader], changes, ANSWER_TIMEOUT_S)
        except OSError as error:
            answers = [{"error": f"connect: {error}"}] * len(changes)  # never sent: definitely not made
        rows = []
        for change, answer in zip(changes, answers):
            if answer is None:
                kind, fields = "info", {"error": "no answer"}
            elif "error" in answer:
                kind, fields = "fail", {"error": answer["error"], "epoch": answer.get("epoch")}
            else:
                kind, fields = "ok", {"offset": answer["offset"], "epoch": answer["epoch"]}
            rows.append(
                self.recorder.record(NEMESIS_PROCESS, kind, change["op"], value=_value(change), node=leader, **fields)
            )
        return rows

    def shrink(self, count: int, rng: random.Random, only: list[str] | None = None) -> list[str]:
        """Remove `count` live followers from the voter set, all at once (or
        the voters of `only`, the leader too, as a simulated schedule names them)."""
        view = self.leader_view()
        if view is None:
            raise ClusterError("no leader to ask")
        leader, voters = view
        if only is not None:
            chosen = sorted(node for node in voters if node in only)
        else:
            live = set(self.nemesis.live())
            followers = sorted(node for node in voters if node != leader and node in live)
            chosen = sorted(rng.sample(followers, min(count, len(followers))))
        self.change(leader, [_remove(node, voters[node]) for node in chosen])
        return chosen

    def rejoin(self, only: list[str] | None = None) -> list[str]:
        """Every running node (of `only`, if given) a voter under its current directory id."""
        deadline = time.monotonic() + REJOIN_TIMEOUT_S
        touched: list[str] = []
        for node in only if only is not None else self.cluster.ids:
            while node not in self.nemesis.down and time.monotonic() < deadline:
                step = self._next_step(node)
                if step == "done":
                    break
                if step == "wait":
                    time.sleep(0.2)
                    continue
                rows = self.change(*step)
                touched.append(node)
                if any(r["type"] == "fail" and r.get("error") not in RETRYABLE for r in rows):
                    break
                if any(r["type"] != "ok" for r in rows):
                    time.sleep(0.2)
        return sorted(set(touched))

    def _next_step(self, node: str) -> str | tuple[str, list[dict[str, Any]]]:
        """ "done", "wait" (no leader or no answer yet), or (leader, [the change to make next])."""
        view = self.leader_view()
        status = self.cluster.status(node)
        if view is None or status is None:
            return "wait"
        leader, voters = view
        directory = status.get("directory_id")
        if voters.get(node, "absent") == directory:
            return "done"
        add = {"op": "add-voter", "node": node, "directory_id": directory, "ack_when_committed": True}
        if node in voters:
            # Both at once, as a hurried operator would: the leader must take the second only after the first commits.
            return leader, [_remove(node, voters[node]), add]
        return leader, [add]


def _remove(node: str, directory: str | None) -> dict[str, Any]:
    return {"op": "remove-voter", "node": node, "directory_id": directory}


def _value(change: dict[str, Any]) -> dict[str, Any]:
    return {k: change[k] for k in ("node", "directory_id", "ack_when_committed") if k in change}
