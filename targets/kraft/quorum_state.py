"""The one owner of a node's quorum state and of every transition between states.

Transition table (KIP-996 final revision, as this node implements it):

    Unattached  -> Unattached   learns a higher epoch; or grants a standard vote (same epoch)
                -> Prospective  election timeout expires
                -> Follower     discovers a leader of an equal or higher epoch
    Prospective -> Unattached   learns a higher epoch; or loses/times out knowing no leader
                -> Prospective  grants a standard vote (same epoch)
                -> Candidate    a majority granted Pre-Votes (epoch + 1, votes for itself)
                -> Follower     discovers a leader of an equal or higher epoch; or
                                loses/times out while it knew a leader
    Candidate   -> Unattached   learns a higher epoch
                -> Prospective  election timeout expires (after winning or losing nothing)
                -> Leader       a majority granted standard votes
                -> Follower     discovers a leader of an equal or higher epoch
    Leader      -> Unattached   learns a higher epoch
                -> Follower     discovers a leader of a higher epoch
                -> Resigned     check-quorum fails, or graceful shutdown
    Follower    -> Unattached   learns a higher epoch
                -> Prospective  fetch timeout expires
                -> Follower     discovers a leader of a higher epoch
    Resigned    -> Unattached   learns a higher epoch, or the election timeout expires (epoch + 1)
                -> Follower     discovers a leader of a higher epoch

An observer (a replica that is not in the voter set in force) never becomes
Prospective: when its fetch timeout expires, or a voter it was is removed,
it goes to Unattached in the same epoch and looks for the leader again.

Only Prospective becomes Candidate. Epochs never decrease. Every change of
(epoch, voted_for, leader) is handed to the shell as a durable write that it
must fsync before sending anything produced in the same step ("persist before
send"); the core never sends a vote it has not asked to persist.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from .states import (
    CandidateState,
    FollowerState,
    LeaderState,
    ProspectiveState,
    QuorumRole,
    ResignedState,
    UnattachedState,
)


@dataclass(frozen=True)
class ElectionState:
    """What the quorum-state file holds: the epoch, this node's vote in it, and
    the leader it knows of."""

    epoch: int = 0
    voted_for: str | None = None
    leader: str | None = None


class IllegalTransition(RuntimeError):
    """A transition the table above forbids: a bug in the node, never a protocol outcome."""


_SAME_EPOCH_SOURCES: dict[str, set[str]] = {
    "unattached": {"prospective"},
    "observer-unattached": {"prospective", "candidate", "follower"},
    "prospective": {"unattached", "follower", "candidate"},
    "leader": {"candidate"},
    "follower": {"unattached", "prospective", "candidate"},
    "resigned": {"leader"},
}


class QuorumState:
    def __init__(
        self,
        node_id: str,
        persisted: ElectionState,
        now_ms: int,
        election_timeout_ms: int,
        fetch_timeout_ms: int,
        rng: random.Random,
        emit: Callable[[dict], None],
        forget_vote: bool = False,
        directory_id: str | None = None,
    ) -> None:
        self.node_id = node_id
        self.directory_id = directory_id
        self.election_timeout_ms = election_timeout_ms
        self.fetch_timeout_ms = fetch_timeout_ms
        self.rng = rng
        self._emit = emit
        # Planted bug `forget-vote`: the vote never reaches the disk.
        self._forget_vote = forget_vote
        self.pending_write: ElectionState | None = None
        self._written = persisted
        self.state: QuorumRole
        # A node that led before its restart lost its leader state: it comes
        # back Resigned and moves on to epoch + 1, as KRaft does.
        if persisted.leader == node_id:
            self.state = ResignedState(persisted.epoch, node_id, self.election_deadline(now_ms))
        elif persisted.leader is not None:
            self.state = FollowerState(
                persisted.epoch, persisted.leader, persisted.voted_for, now_ms + fetch_timeout_ms
            )
        else:
            self.state = UnattachedState(persisted.epoch, persisted.voted_for, self.election_deadline(now_ms))
        self._announce()

    @property
    def epoch(self) -> int:
        return self.state.epoch

    @property
    def leader(self) -> str | None:
        return self.state.leader

    @property
    def voted_for(self) -> str | None:
        return self.state.voted_for

    def election_deadline(self, now_ms: int) -> int:
        """A fresh randomized election deadline: now + [T, 2T)."""
        return now_ms + self.election_timeout_ms + self.rng.randrange(self.election_timeout_ms)

    # Transitions. Each validates against the table, then persists, then announces.

    def become_unattached(self, epoch: int, now_ms: int, voted_for: str | None = None) -> None:
        self._transition(UnattachedState(epoch, voted_for, self.election_deadline(now_ms)))

    def become_observer(self, now_ms: int) -> None:
        """Not (or no longer) a voter: Unattached in the same epoch, keeping the vote."""
        self._transition(UnattachedState(self.epoch, self.voted_for, self.election_deadline(now_ms)), observer=True)

    def grant_standard_vote(self, candidate: str, as_directory: str | None = None) -> None:
        """Record a standard vote in the current epoch (Unattached or Prospective)."""
        state = self.state
        if not isinstance(state, (UnattachedState, ProspectiveState)) or state.voted_for not in (None, candidate):
            raise IllegalTransition(
                f"{self.node_id}: cannot vote for {candidate} in epoch {state.epoch} as {state.name}"
                f" (voted_for={state.voted_for})"
            )
        state.voted_for = candidate
        self._persist()
        self._emit(
            {
                "event": "vote",
                "epoch": state.epoch,
                "candidate": candidate,
                "directory_id": self.directory_id,
                "as_directory": as_directory,
            }
        )
        self._announce()

    def become_prospective(self, now_ms: int) -> None:
        state = self.state
        self._transition(
            ProspectiveState(
                state.epoch,
                state.voted_for if not isinstance(state, CandidateState) else self.node_id,
                state.leader,
                self.election_deadline(now_ms),
            )
        )

    def become_candidate(self, now_ms: int) -> None:
        self._transition(CandidateState(self.epoch + 1, self.node_id, self.election_deadline(now_ms)))

    def become_leader(self, now_ms: int) -> None:
        self._transition(LeaderState(self.epoch, self.node_id, now_ms))

    def become_follower(self, epoch: int, leader: str, now_ms: int) -> None:
        voted_for = self.state.voted_for if epoch == self.epoch else None
        self._transition(FollowerState(epoch, leader, voted_for, now_ms + self.fetch_timeout_ms))

    def become_resigned(self, successors: tuple[str, ...], now_ms: int) -> None:
        self._transition(ResignedState(self.epoch, self.node_id, self.election_deadline(now_ms), successors))

    def _transition(self, new: QuorumRole, observer: bool = False) -> None:
        old = self.state
        if new.epoch < old.epoch:
            raise IllegalTransition(f"{self.node_id}: {old.name} -> {new.name}: epoch {old.epoch} -> {new.epoch}")
        if new.name == "candidate" and (old.name != "prospective" or new.epoch != old.epoch + 1):
            raise IllegalTransition(f"{self.node_id}: {old.name} -> candidate at epoch {old.epoch} -> {new.epoch}")
        table = "observer-unattached" if observer else new.name
        if new.name != "candidate" and new.epoch == old.epoch and old.name not in _SAME_EPOCH_SOURCES[table]:
            raise IllegalTransition(f"{self.node_id}: {old.name} -> {new.name} in the same epoch {old.epoch}")
        if isinstance(old, FollowerState) and isinstance(new, FollowerState) and new.epoch == old.epoch:
            raise IllegalTransition(
                f"{self.node_id}: follower of {old.leader} -> follower of {new.leader} in epoch {old.epoch}"
            )
        self.state = new
        self._persist()
        self._announce()

    def _persist(self) -> None:
        wanted = ElectionState(self.epoch, None if self._forget_vote else self.voted_for, self.leader)
        if wanted != self._written:
            self._written = wanted
            self.pending_write = wanted

    def _announce(self) -> None:
        self._emit(
            {
                "event": "transition",
                "state": self.state.name,
                "epoch": self.epoch,
                "leader": self.leader,
                "voted_for": self.voted_for,
                "directory_id": self.directory_id,
            }
        )
