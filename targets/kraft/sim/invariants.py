"""Safety invariants of the reference quorum, checked after every simulated step.

The monitor watches what nodes do (their Ready batches and status) with the
simulator's omniscience: it sees every log, every vote and every client
answer, so a violation is reported the moment it happens, with the time.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from ..core import RaftCore, Ready
from ..messages import Entry


class InvariantViolation(AssertionError):
    """A safety property of Raft/KRaft was broken; the message says which and where."""


def _entry_key(entry: Entry) -> str:
    return json.dumps([entry.epoch, entry.data], sort_keys=True)


@dataclass
class _ReadCheck:
    key: str
    committed_at_invoke: int


@dataclass
class SafetyMonitor:
    """At most one leader per epoch; one vote per replica per epoch (across
    restarts); epochs never decrease; log matching; leader completeness;
    monotonic high watermark within a node's life; no committed entry lost;
    acknowledged appends stay committed at their offset; reads are not stale.
    Pre-Vote (KIP-996): a follower that has fetched from its leader grants no
    pre-vote. Membership: a leader never holds two uncommitted voter changes;
    a voter change answered under AckWhenCommitted=true is committed when
    answered; a wiped node never votes under the identity (directory id) it
    lost.
    Generations (KIP-380): once a leader has heard from a new life of a
    replica (a later generation, or a new disk), it counts only offsets that
    life reported."""

    leaders: dict[int, str] = field(default_factory=dict)
    votes: dict[tuple[str, str | None, int], str] = field(default_factory=dict)
    # Per replica (node, directory id): a wiped disk starts again from epoch 0.
    epochs: dict[tuple[str, str | None], int] = field(default_factory=dict)
    hwms: dict[str, int] = field(default_factory=dict)
    committed: list[str] = field(default_factory=list)
    # The epoch each committed offset was committed in: the epoch of the first node that knew it committed.
    committed_in: list[int] = field(default_factory=list)
    # Prefix hash (as in `chains`) of the committed log at each offset.
    committed_chain: list[int] = field(default_factory=list)
    acked: dict[int, str] = field(default_factory=dict)
    # (offset, epoch) -> key of the whole prefix ending there, for log matching.
    prefixes: dict[tuple[int, int], int] = field(default_factory=dict)
    chains: dict[str, list[int]] = field(default_factory=dict)
    reads: dict[object, _ReadCheck] = field(default_factory=dict)
    # key -> [(offset, value)] of committed writes, in offset order.
    writes: dict[str, list[tuple[int, object]]] = field(default_factory=dict)
    # (leader, epoch, replica) -> the latest generation of the replica that leader heard from.
    generations: dict[tuple[str, int, str], int] = field(default_factory=dict)
    now_ms: int = 0

    def fail(self, what: str) -> None:
        raise InvariantViolation(f"t={self.now_ms}ms: {what}")

    def restarted(self, node: str) -> None:
        self.hwms[node] = 0

    def read_invoked(self, request_id: object, key: str) -> None:
        self.reads[request_id] = _ReadCheck(key, len(self.committed))

    def observe(self, core: RaftCore, ready: Ready) -> None:
        """Check one node after it produced `ready` (already made durable)."""
        node = core.node_id
        for event in ready.events:
            self._observe_event(node, event)
        if core.state.name == "leader":
            committed = max(core.hwm, len(self.committed))
            uncommitted = [o for o in core.log.voter_offsets if o >= committed]
            if len(uncommitted) > 1:
                self.fail(
                    f"{node} leads epoch {core.epoch} with two uncommitted voter changes at offsets {uncommitted}"
                )
        replica = (node, core.config.directory_id)
        if core.epoch < self.epochs.get(replica, 0):
            self.fail(f"{node} epoch went back from {self.epochs[replica]} to {core.epoch}")
        self.epochs[replica] = core.epoch
        self._check_log_matching(core, ready)
        self._check_committed(core)
        for request_id, reply in ready.replies:
            self._check_reply(core, request_id, reply)

    def _observe_event(self, node: str, event: dict) -> None:
        kind = event["event"]
        if kind == "prevote" and event.get("leader") is not None:
            self.fail(
                f"pre-vote rule: {node} granted {event['candidate']} a pre-vote in epoch {event['epoch']} "
                f"while following {event['leader']}, whose log it had fetched"
            )
        if kind == "vote" or (kind == "transition" and event["state"] == "candidate"):
            # A candidate's vote for itself counts as its one vote of the epoch.
            candidate = event.get("candidate", node)
            directory, as_directory = event.get("directory_id"), event.get("as_directory")
            if None not in (directory, as_directory) and directory != as_directory:
                self.fail(
                    f"wiped node voted under its old identity: {node} (directory {directory}) voted for"
                    f" {candidate} as {as_directory} in epoch {event['epoch']}"
                )
            key = (node, directory, event["epoch"])
            if self.votes.setdefault(key, candidate) != candidate:
                self.fail(f"{node} voted for {self.votes[key]} and {candidate} in epoch {event['epoch']}")
        elif kind == "voter-change-answered" and event["ack_when_committed"] and event["offset"] >= event["hwm"]:
            self.fail(
                f"voter change acknowledged before commit: {node} answered AckWhenCommitted=true for offset"
                f" {event['offset']} with its high watermark at {event['hwm']}"
            )
        elif kind == "generation":
            [(replica, generation, _)] = event["replicas"]
            self.generations[(node, event["epoch"], replica)] = generation
        elif kind == "commit":
            for replica, generation, offset in event.get("replicas", ()):
                latest = self.generations.get((node, event["epoch"], replica))
                if generation is not None and latest is not None and generation != latest:
                    self.fail(
                        f"generation rule: {node} counted {replica}'s offset {offset} from generation"
                        f" {generation} after hearing generation {latest} (epoch {event['epoch']})"
                    )
        elif kind == "transition" and event["state"] == "leader":
            epoch = event["epoch"]
            if self.leaders.setdefault(epoch, node) != node:
                self.fail(f"two leaders in epoch {epoch}: {self.leaders[epoch]} and {node}")

    def _check_log_matching(self, core: RaftCore, ready: Ready) -> None:
        chain = self.chains.setdefault(core.node_id, [])
        del chain[ready.log_from :]
        entries = core.log.entries
        for offset in range(len(chain), len(entries)):
            prefix = hash((chain[-1] if chain else 0, _entry_key(entries[offset])))
            chain.append(prefix)
            seen = self.prefixes.setdefault((offset, entries[offset].epoch), prefix)
            if seen != prefix:
                self.fail(f"log matching: {core.node_id} differs from another log at or before offset {offset}")
        if any(e["event"] == "transition" and e["state"] == "leader" for e in ready.events):
            # Raft's leader completeness: entries committed in earlier epochs.
            # A stale leader of an old epoch need not hold what later epochs
            # committed, even records written before its own epoch began (a
            # candidate paused with its votes held, and elected once resumed).
            for offset, (key, epoch) in enumerate(zip(self.committed, self.committed_in)):
                if epoch >= core.epoch:
                    break
                if offset >= len(entries) or _entry_key(entries[offset]) != key:
                    self.fail(
                        f"leader completeness: {core.node_id} leads epoch {core.epoch} without committed offset {offset}"
                    )

    def _check_committed(self, core: RaftCore) -> None:
        node = core.node_id
        if core.hwm < self.hwms.get(node, 0):
            self.fail(f"{node} high watermark went back from {self.hwms[node]} to {core.hwm}")
        self.hwms[node] = core.hwm
        entries = core.log.entries
        chain = self.chains[node]
        overlap = min(core.hwm, len(self.committed))
        if overlap and chain[overlap - 1] != self.committed_chain[overlap - 1]:
            offset = next(o for o in range(overlap) if chain[o] != self.committed_chain[o])
            self.fail(f"committed entry lost: {node} has a different record at committed offset {offset}")
        for offset in range(len(self.committed), core.hwm):
            self.committed.append(_entry_key(entries[offset]))
            self.committed_in.append(core.epoch)
            self.committed_chain.append(chain[offset])
            data = entries[offset].data
            if data.get("op") in ("write", "cas"):
                self._record_write(offset, data)
            if offset in self.acked and self.acked[offset] != self.committed[offset]:
                self.fail(f"acknowledged append lost: offset {offset} was acknowledged as {self.acked[offset]}")

    def _record_write(self, offset: int, data: dict) -> None:
        history = self.writes.setdefault(data["key"], [])
        current = history[-1][1] if history else None
        if data["op"] == "write":
            history.append((offset, data["value"]))
        elif current == data["expected"]:
            history.append((offset, data["new"]))

    def _check_reply(self, core: RaftCore, request_id: object, reply: dict) -> None:
        read = self.reads.pop(request_id, None)
        if reply.get("error"):
            return
        if read is not None:
            allowed = self._values_between(read.key, read.committed_at_invoke, len(self.committed))
            if reply.get("value") not in allowed:
                self.fail(f"stale read by {core.node_id}: {read.key}={reply.get('value')!r}, expected one of {allowed}")
            return
        if "offset" not in reply:
            return
        offset = reply["offset"]
        key = _entry_key(Entry(reply["epoch"], core.log.entries[offset].data))
        if offset < len(self.committed) and self.committed[offset] != key:
            self.fail(f"acknowledged append lost: offset {offset} acknowledged but committed differently")
        self.acked[offset] = key

    def _values_between(self, key: str, start: int, end: int) -> list:
        """Values the register held at some committed prefix length in [start, end]."""
        history = self.writes.get(key, [])
        before = [value for offset, value in history if offset < start]
        values = [before[-1] if before else None]
        values += [value for offset, value in history if start <= offset < end]
        return values


__all__ = ["InvariantViolation", "SafetyMonitor"]
