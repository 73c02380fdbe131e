"""The sans-IO Raft core of the reference quorum (KRaft with KIP-996 Pre-Vote).

`RaftCore` has no sockets, files or clock. The shell feeds it messages
(`step`), timer ticks (`tick`) and client commands (`submit`), each with the
current time in milliseconds, then drains a `Ready` batch and, in this order:

1. writes `Ready.election_state` (if any) and makes the log file hold exactly
   `entries[:log_from] + Ready.entries`, and fsyncs both;
2. only then sends `Ready.messages` and `Ready.replies` (persist before send:
   a vote or a fetch offset that depends on a write is never sent before it);
3. calls `advance(ready, now_ms)`, which lets the leader count its own
   flushed records towards the high watermark.

`ready()`/`advance()` pairs never interleave with other calls. Randomness (the
election timeouts) comes only from the injected `random.Random`.

Membership (KIP-853, see `voters.py`): the voter set in force is the latest
voters record in the log. Elections, the high watermark and check-quorum
count the replicas of that set, each under its directory id. Replicas outside
it are observers: they fetch, never campaign, and with `auto_join` ask the
leader to add them. The leader makes one voter change at a time, answering
AddRaftVoter once the new set is committed, or once it is written when the
request says AckWhenCommitted=false (KIP-1186). Towards one peer a replica has
one request in flight at a time, as Kafka's connections do: while its
AddRaftVoter waits for an answer, it does not fetch from that leader.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from .log import Records, ReplicatedLog
from .machine import RegisterMachine
from .messages import (
    BeginQuorumEpoch,
    EndQuorumEpoch,
    EndQuorumEpochResponse,
    Entry,
    FetchRequest,
    FetchResponse,
    Message,
    VoterChangeRequest,
    VoterChangeResponse,
    VoteRequest,
    VoteResponse,
)
from .quorum_state import ElectionState, QuorumState
from .states import (
    CandidateState,
    FollowerState,
    LeaderState,
    ProspectiveState,
    ResignedState,
    UnattachedState,
)
from .voters import ReplicaKey, VoterSet, same_directory


class Bug(StrEnum):
    """Planted bugs, each enabled by name (`--bug NAME`); the core asks
    `Bug.X in config.bugs`, so a misspelt bug fails at once instead of
    never matching."""

    # The vote is not persisted, so a restarted node can vote twice in an epoch.
    FORGET_VOTE = "forget-vote"
    # The leader acknowledges appends once flushed locally, before the high watermark covers them.
    ACK_BEFORE_COMMIT = "ack-before-commit"
    # Register reads are answered from local state by any node that believes it leads.
    STALE_READ = "stale-read"
    # Followers grant Pre-Votes even while fetching from a live leader.
    PREVOTE_ALWAYS = "prevote-always"
    # The leader accepts a voter change while another is uncommitted.
    MULTI_VOTER_CHANGE = "multi-voter-change"
    # A replica is taken for a voter by its node id alone, so a wiped node votes (and counts
    # towards the high watermark) under its old identity.
    IGNORE_DIRECTORY_ID = "ignore-directory-id"
    # AddRaftVoter with AckWhenCommitted=true is answered once written, before commit.
    ACK_VOTER_EARLY = "ack-voter-early"
    # The leader takes a replica's fetch offsets as never going back, whatever its generation: a
    # bounced replica that lost unflushed records still counts towards the high watermark at its
    # earlier life's offset.
    IGNORE_GENERATION = "ignore-generation"
    # The leader does not fsync its own log: it counts its records towards the high watermark
    # (and so acknowledges them) once written, which a power loss undoes.
    ACK_BEFORE_FSYNC = "ack-before-fsync"


BUGS = frozenset(bug.value for bug in Bug)

VOTER_CHANGES = {"add-voter": "add", "remove-voter": "remove"}
# Fetch timeouts a replica catching up waits for a leader before it campaigns anyway.
UNCLEAN_WAIT = 10

INDETERMINATE = "indeterminate"


@dataclass(frozen=True)
class RaftConfig:
    """Settings of one node. Times are milliseconds on the core's clock.

    `bootstrap` is the initial voter set, written as the first record of an
    empty log (a fixed set, or this node alone for `--standalone`); empty for
    a replica that joins as an observer. `peers` are the nodes it can reach,
    where an observer looks for the leader. `voter_change_timeout_ms` is how
    long an auto-joining replica waits for AddRaftVoter's answer.
    """

    node_id: str
    bootstrap: tuple[ReplicaKey, ...] = ()
    peers: tuple[str, ...] = ()
    directory_id: str | None = None
    auto_join: bool = False
    ack_when_committed_always: bool = False
    voter_change_timeout_ms: int = 2000
    election_timeout_ms: int = 500
    fetch_timeout_ms: int = 1000
    # How long the leader holds a fetch that has nothing new (long poll).
    fetch_max_wait_ms: int = 200
    # A follower re-sends a fetch that got no answer after this long.
    request_timeout_ms: int = 400
    max_fetch_records: int = 512
    pre_vote: bool = True
    check_quorum: bool = True
    bugs: frozenset[str] = frozenset()
    # This life of the node (KIP-380): one more at every start from the disk.
    generation: int = 0
    # 0: every write is fsynced before anything depends on it. N: a follower
    # fsyncs every N ms and reports fetch offsets that include unflushed records.
    flush_interval_ms: int = 0
    # Started after a crash, not a clean shutdown: with a flush interval, the
    # last life's unflushed records may be gone (see `RaftCore.catching_up`).
    unclean_start: bool = False
    # Started on a log whose damaged tail was cut off: records it reported may be gone.
    truncated_log: bool = False
    # 0: reads go through the log. N: the leader answers a read from its own
    # state while a majority fetched within the last N ms of its clock (see
    # `RaftCore._lease_holds`); correct only while N, plus a message's delay
    # and the clocks' drift, stays under the fetch timeout.
    read_lease_ms: int = 0

    def __post_init__(self) -> None:
        unknown = set(self.bugs) - BUGS
        if unknown:
            raise ValueError(f"unknown bugs {sorted(unknown)}; known: {sorted(BUGS)}")
        if not 0 <= self.read_lease_ms < self.fetch_timeout_ms:
            raise ValueError(
                f"read lease of {self.read_lease_ms} ms: it must be 0 (off) or under the fetch timeout "
                f"({self.fetch_timeout_ms} ms), which is how long a follower that fetched refuses a pre-vote"
            )


@dataclass(frozen=True)
class Ready:
    """A batch of work for the shell; see the module docstring for the order.

    `log_from`/`entries`: the durable log must become its first `log_from`
    records followed by `entries` (a truncation when `log_from` is below what
    the file holds), fsynced when `sync` (always, unless a follower runs with
    a flush interval: then written, and fsynced on the shell's timer).
    `replies` pair a client request id with its answer: an answer with
    `"error"` is definite failure unless the error is `indeterminate`.
    `events` are facts for the node's event log.
    """

    election_state: ElectionState | None
    log_from: int
    entries: tuple[Entry, ...]
    log_end: int
    messages: tuple[Message, ...]
    replies: tuple[tuple[Any, dict], ...]
    events: tuple[dict, ...]
    sync: bool = True


@dataclass
class _Pending:
    request_id: Any
    epoch: int
    acked: bool = False
    # A voter change answered once written rather than once committed.
    ack_on_write: bool = False
    ack_when_committed: bool | None = None


@dataclass(frozen=True)
class _PeerRequest:
    """A voter change asked by a peer: its answer is a message, not a client reply."""

    request: VoterChangeRequest


@dataclass
class _Parked:
    request: FetchRequest
    deadline_ms: int


class RaftCore:
    def __init__(
        self,
        config: RaftConfig,
        persisted: ElectionState,
        entries: Records,
        rng: random.Random,
        now_ms: int,
        snapshot: tuple[int, dict] | None = None,
    ) -> None:
        """`snapshot`: the state machine after the log's first records, as
        (how many were applied, the registers), where the shell kept one."""
        self.config = config
        self.node_id = config.node_id
        self.rng = rng
        self.now_ms = now_ms
        self.log = ReplicatedLog(entries)
        # Written by the shell, and of that fsynced (what a leader counts for itself).
        self.flushed_end = self.synced_end = self.log.end_offset
        # KIP-380/KIP-903's lesson: after an unclean start with a flush
        # interval, or on a log cut back past a damaged tail, this replica
        # may have lost records it reported, so it neither votes nor
        # campaigns until it has caught up with a leader's high watermark;
        # after an unclean start only until no leader answered for
        # `UNCLEAN_WAIT` timeouts (`_still_catching_up`); `unclean`: gave up so, not caught up since.
        self.catching_up = bool(config.flush_interval_ms and config.unclean_start) or config.truncated_log
        self.may_give_up = not config.truncated_log
        self.unclean = False
        self._catch_up_until_ms = now_ms + UNCLEAN_WAIT * config.fetch_timeout_ms
        self.hwm = 0
        # Applied may run ahead of the high watermark this life has learnt: what a snapshot held was committed.
        self.applied = snapshot[0] if snapshot else 0
        self.machine = RegisterMachine(snapshot[1] if snapshot else None)
        self._messages: list[Message] = []
        self._replies: list[tuple[Any, dict]] = []
        self._events: list[dict] = []
        self._pending: dict[int, _Pending] = {}
        self._parked: dict[str, _Parked] = {}
        self._ignore_directory = Bug.IGNORE_DIRECTORY_ID in config.bugs
        # The one request this replica has in flight for a voter change: (peer, sent at).
        self._change_in_flight: tuple[str, int] | None = None
        self._next_join_ms = now_ms
        self._seek_index = 0
        self._announced_voters: int | None = None
        if not self.log.entries and config.bootstrap:
            self.log.append([Entry(0, VoterSet.of(config.bootstrap).record())])
        self.quorum = QuorumState(
            config.node_id,
            persisted,
            now_ms,
            config.election_timeout_ms,
            config.fetch_timeout_ms,
            rng,
            self._events.append,
            forget_vote=Bug.FORGET_VOTE in config.bugs,
            directory_id=config.directory_id,
        )
        if self._alone() and isinstance(self.quorum.state, UnattachedState):
            self.quorum.state.election_deadline_ms = now_ms
        self._announce_voters()

    # ------------------------------------------------------------------ queries

    @property
    def epoch(self) -> int:
        return self.quorum.epoch

    @property
    def state(self):
        return self.quorum.state

    @property
    def voters(self) -> VoterSet:
        return self.log.voter_set()

    @property
    def is_voter(self) -> bool:
        return self.voters.has(self.node_id, self.config.directory_id, self._ignore_directory)

    @property
    def others(self) -> tuple[str, ...]:
        return tuple(v for v in self.voters.ids if v != self.node_id)

    def _alone(self) -> bool:
        return self.is_voter and len(self.voters.voters) == 1

    def status(self) -> dict:
        return {
            "node": self.node_id,
            "state": self.state.name,
            "epoch": self.epoch,
            "leader": self.quorum.leader,
            "voted_for": self.quorum.voted_for,
            "log_end_offset": self.log.end_offset,
            "synced_offset": self.synced_end,
            "hwm": self.hwm,
            "voters": [list(v) for v in self.voters.voters],
            "voter": self.is_voter,
        }

    def committed_entries(self, from_offset: int = 0, limit: int | None = None) -> list[tuple[int, Entry]]:
        """This node's committed records (below its high watermark) from `from_offset`, at most `limit`."""
        start = max(0, from_offset)
        end = self.hwm if limit is None else min(self.hwm, start + limit)
        return list(zip(range(start, end), self.log.entries[start:end]))

    # ------------------------------------------------------------------ inputs

    def step(self, msg: Message, now_ms: int) -> None:
        """Handle one message from a peer."""
        self.now_ms = now_ms
        if msg.dst != self.node_id:
            return
        meant_for = getattr(msg, "replica_generation", None)
        if meant_for is not None and meant_for < self.config.generation:
            self._events.append(
                {
                    "event": "stale-generation",
                    "epoch": self.epoch,
                    "from": msg.src,
                    "replicas": [[self.node_id, meant_for, None]],
                    "current": self.config.generation,
                }
            )
            return
        if msg.epoch > self.epoch:
            self._observe_higher_epoch(msg)
        if isinstance(msg, VoteRequest):
            self._handle_vote_request(msg)
        elif isinstance(msg, VoteResponse):
            self._handle_vote_response(msg)
        elif isinstance(msg, BeginQuorumEpoch):
            self._handle_begin_quorum_epoch(msg)
        elif isinstance(msg, EndQuorumEpoch):
            self._handle_end_quorum_epoch(msg)
        elif isinstance(msg, EndQuorumEpochResponse):
            self._handle_end_quorum_epoch_response(msg)
        elif isinstance(msg, FetchRequest):
            self._handle_fetch_request(msg)
        elif isinstance(msg, FetchResponse):
            self._handle_fetch_response(msg)
        elif isinstance(msg, VoterChangeRequest):
            self._handle_voter_change_request(msg)
        elif isinstance(msg, VoterChangeResponse):
            self._handle_voter_change_response(msg)
        self._maybe_fetch()

    def tick(self, now_ms: int) -> None:
        """Let time pass: fire whichever timer of the current state expired."""
        self.now_ms = now_ms
        state = self.state
        if isinstance(state, UnattachedState):
            if now_ms >= state.election_deadline_ms:
                self._start_prospective()
        elif isinstance(state, ProspectiveState):
            if now_ms >= state.election_deadline_ms:
                self._lose_pre_vote()
            else:
                self._retry_vote_requests(state, pre_vote=True)
        elif isinstance(state, CandidateState):
            if now_ms >= state.election_deadline_ms:
                self._start_prospective()
            else:
                self._retry_vote_requests(state, pre_vote=False)
        elif isinstance(state, FollowerState):
            if now_ms >= state.fetch_deadline_ms:
                self._start_prospective()
        elif isinstance(state, LeaderState):
            self._tick_leader(state)
        elif isinstance(state, ResignedState):
            if now_ms >= state.election_deadline_ms:
                # KIP-996: Resigned -> Unattached at epoch + 1, whose election
                # timeout is what remained of Resigned's: Prospective at once.
                self.quorum.become_unattached(self.epoch + 1, now_ms)
                self._start_prospective()
            else:
                self._send_end_quorum(state)
        self._maybe_fetch()

    def submit(self, request_id: Any, command: dict, now_ms: int) -> None:
        """A client command that goes through the log (append, write, cas, read).

        A node that is not the leader answers at once with a definite
        `not-leader` error naming the leader it knows.
        """
        self.now_ms = now_ms
        state = self.state
        if command.get("op") == "read" and Bug.STALE_READ in self.config.bugs and isinstance(state, LeaderState):
            self._replies.append((request_id, self.machine.read_now(command["key"])))
            return
        if command.get("op") == "read" and isinstance(state, LeaderState) and self._lease_holds(state):
            self._replies.append((request_id, {**self.machine.read_now(command["key"]), "epoch": self.epoch}))
            return
        if command.get("op") in VOTER_CHANGES:
            self._change_voters(
                VOTER_CHANGES[command["op"]],
                str(command["node"]),
                command.get("directory_id"),
                bool(command.get("ack_when_committed", True)),
                request_id,
            )
            return
        if not isinstance(state, LeaderState):
            self._replies.append(
                (request_id, {"error": "not-leader", "leader": self.quorum.leader, "epoch": self.epoch})
            )
            return
        offset = self.log.end_offset
        self.log.append([Entry(self.epoch, dict(command))])
        self._pending[offset] = _Pending(request_id, self.epoch)
        self._answer_parked()

    def resign(self, now_ms: int) -> None:
        """Graceful shutdown: a leader resigns and tells the others who should follow."""
        self.now_ms = now_ms
        if isinstance(self.state, LeaderState):
            self._resign(self.state)

    # ------------------------------------------------------------------ outputs

    def has_ready(self) -> bool:
        return bool(
            self.quorum.pending_write
            or self.log.dirty_from < self.log.end_offset
            or self.log.dirty_from < self.flushed_end
            or (self._syncs_as_leader() and self.synced_end < self.flushed_end)
            or self._messages
            or self._replies
            or self._events
        )

    def ready(self) -> Ready:
        ready = Ready(
            election_state=self.quorum.pending_write,
            log_from=self.log.dirty_from,
            entries=tuple(self.log.entries[self.log.dirty_from :]),
            log_end=self.log.end_offset,
            messages=tuple(self._messages),
            replies=tuple(self._replies),
            events=tuple(self._events),
            sync=self._syncs_as_leader()
            or (not self.config.flush_interval_ms and not isinstance(self.state, LeaderState)),
        )
        self.quorum.pending_write = None
        self.log.dirty_from = self.log.end_offset
        self._messages.clear()
        self._replies.clear()
        self._events.clear()
        return ready

    def advance(self, ready: Ready, now_ms: int) -> None:
        """The shell has made `ready` durable and sent its messages."""
        self.now_ms = now_ms
        self.flushed_end = min(ready.log_end, self.log.end_offset)
        if ready.sync:
            self.synced_end = self.flushed_end
        state = self.state
        if isinstance(state, LeaderState):
            self._ack_flushed_appends()
            self._maybe_advance_hwm(state)

    def _syncs_as_leader(self) -> bool:
        """A leader fsyncs every write before it counts it (but with `ack-before-fsync`)."""
        return isinstance(self.state, LeaderState) and Bug.ACK_BEFORE_FSYNC not in self.config.bugs

    def synced(self, end: int, now_ms: int) -> None:
        """The shell's flush timer fsynced the log up to `end`."""
        self.now_ms = now_ms
        self.synced_end = max(self.synced_end, min(end, self.flushed_end))

    # ------------------------------------------------------------------ elections

    def _observe_higher_epoch(self, msg: Message) -> None:
        leader: str | None = None
        if isinstance(msg, BeginQuorumEpoch):
            leader = msg.src
        elif isinstance(msg, (FetchResponse, VoteResponse, VoterChangeResponse)):
            leader = msg.leader
        if leader is not None and leader != self.node_id:
            self._become_follower(msg.epoch, leader)
        else:
            self._leave_leadership()
            self.quorum.become_unattached(msg.epoch, self.now_ms)

    def _start_prospective(self) -> None:
        self._leave_leadership()
        if not self.is_voter:
            self._observe()
            return
        if self._still_catching_up():
            # Wait for a leader: it sends BeginQuorumEpoch to voters that do not fetch.
            state = self.state
            if isinstance(state, FollowerState):
                state.fetch_deadline_ms = self.now_ms + self.config.fetch_timeout_ms
            elif isinstance(state, UnattachedState):
                state.election_deadline_ms = self.quorum.election_deadline(self.now_ms)
            return
        self.quorum.become_prospective(self.now_ms)
        if not self.config.pre_vote or self._alone():
            self._start_candidate()
            return
        self._send_vote_requests(self.others, pre_vote=True)

    def _still_catching_up(self) -> bool:
        """Whether this replica must still not vote or campaign. After an
        unclean start, once `UNCLEAN_WAIT` fetch timeouts passed without a
        leader's answer, it gives up waiting (an unclean recovery: a majority
        that lost unflushed records at once may never see a leader again).
        Until it has caught up with a leader, an election it takes part in
        needs every voter's vote (it campaigns so, and its vote says so:
        VoteResponse's `unclean`): the one holding a commit that the others
        lost may be down, and a majority without it must not elect (the
        simulator's random schedules lost a commit so in 15 of 4,000: a
        leader killed while one follower lost power and the other lagged;
        all three started uncleanly, and the two without the commit elected
        one of them once they gave up). So the longest log among all of them
        wins, and nothing any voter holds is lost but what they all lost at
        once. On a damaged log, never: what it lost was fsynced by the others that acknowledged it, and a majority
        without it can elect one that holds it (an unclean recovery there
        lost a commit: a node cut back to 311 records, tired of waiting, was
        elected with the vote of one that had been down, over the one that
        held offset 311)."""
        if self.catching_up and self.may_give_up and self.now_ms >= self._catch_up_until_ms:
            self.catching_up = False
            self.unclean = True
            self._events.append({"event": "unclean-recovery", "epoch": self.epoch, "offset": self.log.end_offset})
        return self.catching_up

    def _caught_up(self, hwm: int) -> None:
        """A leader answered a fetch: caught up once the log reaches its high
        watermark, one that covers a record of this epoch. Until the leader
        has committed one, its high watermark may fall short of what was
        committed before it (0 after its own restart: a soak's node cut back
        took that for caught up, and could vote again still lacking records
        it had acknowledged)."""
        if not (self.catching_up or self.unclean):
            return
        self._catch_up_until_ms = self.now_ms + UNCLEAN_WAIT * self.config.fetch_timeout_ms
        if 0 < hwm <= self.log.end_offset and self.log.epoch_at(hwm - 1) == self.epoch:
            self.catching_up = self.unclean = False
            self._events.append({"event": "caught-up", "epoch": self.epoch, "offset": self.log.end_offset, "hwm": hwm})

    def _observe(self) -> None:
        """An observer whose leader is gone (or never known) asks the nodes it
        knows, in turn, with a fetch: any of them answers with the leader."""
        state = self.state
        if isinstance(state, UnattachedState):
            state.election_deadline_ms = self.quorum.election_deadline(self.now_ms)
        else:
            self.quorum.become_observer(self.now_ms)
        peers = [p for p in (*self.config.peers, *self.others) if p != self.node_id]
        if not peers:
            return
        peer = peers[self._seek_index % len(peers)]
        self._seek_index += 1
        if not self._connection_busy(peer):
            self._send(self._fetch_request(peer))

    def _start_candidate(self) -> None:
        self.quorum.become_candidate(self.now_ms)
        if self._alone():
            self._become_leader()
            return
        self._send_vote_requests(self.others, pre_vote=False)

    def _send_vote_requests(self, peers: tuple[str, ...], pre_vote: bool) -> None:
        state = self.state
        assert isinstance(state, (ProspectiveState, CandidateState))
        state.requests_sent_ms = self.now_ms
        voters = self.voters
        for peer in peers:
            self._send(
                VoteRequest(
                    self.node_id,
                    peer,
                    self.epoch,
                    self.log.last_epoch,
                    self.log.end_offset,
                    pre_vote,
                    voters.directory_of(peer),
                )
            )

    def _retry_vote_requests(self, state: ProspectiveState | CandidateState, pre_vote: bool) -> None:
        """Like Kafka's request manager: ask again whoever has not answered
        within the request timeout."""
        if self.now_ms - state.requests_sent_ms >= self.config.request_timeout_ms:
            silent = tuple(p for p in self.others if p not in state.granted and p not in state.rejected)
            self._send_vote_requests(silent, pre_vote)

    def _lose_pre_vote(self) -> None:
        """KIP-996: a Prospective that loses or times out goes back to the
        leader it knew, else to Unattached, in the same epoch."""
        state = self.state
        assert isinstance(state, ProspectiveState)
        if state.leader is not None and state.leader != self.node_id:
            self._become_follower(self.epoch, state.leader)
        else:
            self.quorum.become_unattached(self.epoch, self.now_ms, voted_for=state.voted_for)

    def _become_leader(self) -> None:
        self.unclean = False  # if it was, every voter elected it: none holds a longer log
        self.quorum.become_leader(self.now_ms)
        state = self.state
        assert isinstance(state, LeaderState)
        for peer in self.others:
            state.last_fetch_ms[peer] = self.now_ms
            state.begin_sent_ms[peer] = self.now_ms
            self._send(BeginQuorumEpoch(self.node_id, peer, self.epoch))
        # KRaft's LeaderChange record: an entry of the new epoch, so earlier
        # entries can be committed under Raft's commit rule.
        self.log.append([Entry(self.epoch, {"op": "leader", "node": self.node_id})])

    def _become_follower(self, epoch: int, leader: str) -> None:
        self._leave_leadership()
        self._change_in_flight = None
        self.quorum.become_follower(epoch, leader, self.now_ms)

    def _leave_leadership(self) -> None:
        """Forget leader-only bookkeeping; parked fetches will be retried by their senders."""
        self._parked.clear()

    def _resign(self, state: LeaderState) -> None:
        successors = tuple(sorted(self.others, key=lambda v: -state.follower_end.get(v, 0)))
        self._leave_leadership()
        self.quorum.become_resigned(successors, self.now_ms)
        resigned = self.state
        assert isinstance(resigned, ResignedState)
        self._send_end_quorum(resigned)

    def _send_end_quorum(self, state: ResignedState) -> None:
        """The resignation notice to each voter that has not taken it, unless
        sent within the request timeout (KRaft's `pollResigned`)."""
        for peer in self.others:
            sent = state.notice_sent_ms.get(peer)
            if peer not in state.acknowledged and (
                sent is None or self.now_ms - sent >= self.config.request_timeout_ms
            ):
                state.notice_sent_ms[peer] = self.now_ms
                self._send(EndQuorumEpoch(self.node_id, peer, self.epoch, state.successors))

    def _handle_vote_request(self, req: VoteRequest) -> None:
        state = self.state
        granted = False
        # KIP-853: a replica whose directory is not the one the candidate's
        # voter set names (a wiped disk) is not that voter and never votes as it.
        identity_ok = self._ignore_directory or same_directory(req.voter_directory, self.config.directory_id)
        if req.epoch == self.epoch and identity_ok and not self._still_catching_up():
            log_ok = self.log.is_up_to_date(req.last_epoch, req.last_offset)
            if req.pre_vote:
                granted = self._grants_pre_vote(log_ok)
                if granted:
                    # `leader`: the leader this node had fetched from in this epoch, if it had (KIP-996: then it must refuse).
                    fetched = self.quorum.leader if isinstance(state, FollowerState) and state.has_fetched else None
                    self._events.append(
                        {
                            "event": "prevote",
                            "epoch": req.epoch,
                            "candidate": req.src,
                            "as_directory": req.voter_directory,
                            "leader": fetched,
                        }
                    )
            elif isinstance(state, (UnattachedState, ProspectiveState)) and state.leader is None and log_ok:
                if state.voted_for is None:
                    self.quorum.grant_standard_vote(req.src, req.voter_directory)
                granted = state.voted_for == req.src
        answer = VoteResponse(
            self.node_id, req.src, self.epoch, granted, req.pre_vote, self.quorum.leader, self.unclean
        )
        self._send(answer)

    def _grants_pre_vote(self, log_ok: bool) -> bool:
        """KIP-996 "Pre-Vote request handling": leaders never grant; followers
        refuse once they have fetched from their leader; others grant on the log."""
        state = self.state
        if isinstance(state, LeaderState):
            return False
        if isinstance(state, FollowerState) and state.has_fetched and Bug.PREVOTE_ALWAYS not in self.config.bugs:
            return False
        return log_ok

    def _handle_vote_response(self, resp: VoteResponse) -> None:
        state = self.state
        voters = self.voters
        if resp.epoch != self.epoch or not voters.has_node(resp.src):
            return
        if isinstance(state, ProspectiveState) and resp.pre_vote:
            # KIP-996: back to Follower on discovering a *new* leader. The one
            # it already knew is not news (Jack Vanlightly's ping-pong case).
            if resp.leader not in (None, self.node_id, state.leader):
                self._become_follower(self.epoch, resp.leader)
                return
            self._count(state, resp)
            if len(state.granted) + 1 >= self._votes_needed(state):
                self._start_candidate()
            elif len(state.rejected) > len(voters.voters) - self._votes_needed(state):
                self._lose_pre_vote()
        elif isinstance(state, CandidateState) and not resp.pre_vote:
            if resp.leader is not None and resp.leader != self.node_id:
                self._become_follower(self.epoch, resp.leader)
                return
            self._count(state, resp)
            if len(state.granted) + 1 >= self._votes_needed(state):
                self._become_leader()
            # A lost standard vote waits out the election timeout, then goes
            # back to Prospective (KIP-996 "CandidateState changes").

    @staticmethod
    def _count(state: ProspectiveState | CandidateState, resp: VoteResponse) -> None:
        (state.granted if resp.granted else state.rejected).add(resp.src)
        if resp.granted and resp.unclean:
            state.unclean.add(resp.src)

    def _votes_needed(self, state: ProspectiveState | CandidateState) -> int:
        """Votes (its own among them) that elect this node: a majority, or
        every voter where it or a voter that granted recovered uncleanly."""
        return len(self.voters.voters) if self.unclean or state.unclean else self.voters.majority

    def _handle_begin_quorum_epoch(self, msg: BeginQuorumEpoch) -> None:
        state = self.state
        if msg.epoch != self.epoch or isinstance(state, LeaderState):
            return
        if isinstance(state, FollowerState) and state.leader == msg.src:
            return
        if isinstance(state, FollowerState) or isinstance(state, ResignedState):
            self._events.append({"event": "conflict", "epoch": msg.epoch, "leader": msg.src})
            return
        self._become_follower(msg.epoch, msg.src)

    def _handle_end_quorum_epoch(self, msg: EndQuorumEpoch) -> None:
        self._send(EndQuorumEpochResponse(self.node_id, msg.src, self.epoch))
        state = self.state
        if msg.epoch != self.epoch or not isinstance(state, FollowerState) or state.leader != msg.src:
            return
        # KRaft: the preferred successors time out first, in order.
        position = msg.successors.index(self.node_id) if self.node_id in msg.successors else len(msg.successors)
        backoff_ms = position * self.config.election_timeout_ms // 2
        if position:
            backoff_ms += self.rng.randrange(self.config.election_timeout_ms // 4 + 1)
        state.fetch_deadline_ms = min(state.fetch_deadline_ms, self.now_ms + backoff_ms)
        state.has_fetched = False

    def _handle_end_quorum_epoch_response(self, msg: EndQuorumEpochResponse) -> None:
        state = self.state
        if isinstance(state, ResignedState) and msg.epoch == self.epoch:
            state.acknowledged.add(msg.src)

    # ------------------------------------------------------------------ replication

    def _counts_as_voter(self, state: LeaderState, peer: str) -> bool:
        """Has `peer` fetched (if at all) from the directory the voter set names?"""
        if peer not in state.follower_dir:
            return True
        directory = state.follower_dir[peer]
        return self.voters.has(peer, directory, self._ignore_directory)

    def _lease_holds(self, state: LeaderState) -> bool:
        """A read lease (`read_lease_ms`): a majority, this leader among it,
        took an answer this leader sent within the lease by its clock, so each
        of them refuses pre-votes for a fetch timeout from then and no other
        leader can be elected yet; and a record of this epoch has committed,
        so the state holds every acknowledged write. A fetch vouches only
        from the answer it says it took (`answered_ms`), not from when it
        arrived: a voter whose answers are lost still fetches, and fetches
        queued while the leader slept arrive as it wakes, long after their
        senders gave up on it. Measured on one clock: a clock that runs slow
        or jumps back stretches the lease past what is safe."""
        lease = self.config.read_lease_ms
        if not lease or not self.is_voter or self.hwm == 0 or self.log.epoch_at(self.hwm - 1) != self.epoch:
            return False
        return self._voters_within(state, state.answered_ms, lease) + 1 >= self.voters.majority

    def _voters_within(
        self, state: LeaderState, times: dict[str, int], window_ms: int, since: int | None = None
    ) -> int:
        """How many other voters have a time in `times` within the last
        `window_ms` (one with none counts as of `since`, if given)."""
        recent = (times.get(v, since) for v in self.others if self._counts_as_voter(state, v))
        return sum(1 for last in recent if last is not None and self.now_ms - last < window_ms)

    def _tick_leader(self, state: LeaderState) -> None:
        now = self.now_ms
        if self.config.check_quorum:
            # A voter that has not fetched yet has a fetch timeout from the leader's start.
            fresh = self._voters_within(state, state.last_fetch_ms, self.config.fetch_timeout_ms, since=state.start_ms)
            if fresh + self.is_voter < self.voters.majority:
                self._resign(state)
                return
        for peer in self.others:
            silent = now - state.last_fetch_ms.get(peer, state.start_ms) >= self.config.fetch_timeout_ms // 2
            if (peer not in state.follower_end or silent) and now - state.begin_sent_ms.get(peer, 0) >= (
                self.config.election_timeout_ms // 2
            ):
                state.begin_sent_ms[peer] = now
                self._send(BeginQuorumEpoch(self.node_id, peer, self.epoch, state.follower_gen.get(peer)))
        self._answer_parked()

    def _handle_fetch_request(self, req: FetchRequest) -> None:
        state = self.state
        if not isinstance(state, LeaderState) or req.epoch != self.epoch:
            error = "fenced-epoch" if req.epoch < self.epoch else "not-leader"
            self._send(
                FetchResponse(
                    self.node_id,
                    req.src,
                    self.epoch,
                    self.quorum.leader,
                    req.offset,
                    req.last_epoch,
                    error=error,
                    replica_generation=req.generation,
                )
            )
            return
        if not self._current_generation(state, req):
            return
        state.last_fetch_ms[req.src] = self.now_ms
        if req.answered_ms is not None:
            state.answered_ms[req.src] = max(req.answered_ms, state.answered_ms.get(req.src, req.answered_ms))
        state.follower_dir[req.src] = req.directory
        if req.offset > 0:
            epoch, end = self.log.end_offset_for_epoch(req.last_epoch)
            if epoch != req.last_epoch or end < req.offset:
                self._send(
                    FetchResponse(
                        self.node_id,
                        req.src,
                        self.epoch,
                        self.node_id,
                        req.offset,
                        req.last_epoch,
                        hwm=self.hwm,
                        diverging_epoch=epoch,
                        diverging_offset=end,
                        replica_generation=req.generation,
                        sent_ms=self.now_ms,
                    )
                )
                return
        if Bug.IGNORE_GENERATION not in self.config.bugs or state.follower_end.get(req.src, -1) <= req.offset:
            state.follower_end[req.src] = req.offset
            state.end_generation[req.src] = req.generation
        self._parked[req.src] = _Parked(req, self.now_ms + self.config.fetch_max_wait_ms)
        self._maybe_advance_hwm(state)
        self._answer_parked()

    def _current_generation(self, state: LeaderState, req: FetchRequest) -> bool:
        """KIP-380: the leader's view of a replica (fetch offset, held fetch)
        belongs to one generation of it. A fetch from an earlier life is
        refused; one from a later life, or from a new disk (a new directory
        id, whose lives count from 1 again), drops the earlier life's view."""
        known = state.follower_gen.get(req.src)
        new_disk = req.src in state.follower_dir and not same_directory(state.follower_dir[req.src], req.directory)
        if known is not None and req.generation < known and not new_disk:
            self._events.append(
                {
                    "event": "stale-generation",
                    "epoch": self.epoch,
                    "replicas": [[req.src, req.generation, req.offset]],
                    "current": known,
                }
            )
            self._send(
                FetchResponse(
                    self.node_id,
                    req.src,
                    self.epoch,
                    self.node_id,
                    req.offset,
                    req.last_epoch,
                    error="stale-generation",
                    replica_generation=req.generation,
                )
            )
            return False
        if known is not None and (req.generation > known or new_disk):
            # `replicas`: [replica, its later generation, the offset its earlier life reported].
            self._events.append(
                {
                    "event": "generation",
                    "epoch": self.epoch,
                    "previous": known,
                    "replicas": [[req.src, req.generation, state.follower_end.get(req.src)]],
                }
            )
            self._parked.pop(req.src, None)
            if Bug.IGNORE_GENERATION not in self.config.bugs:
                state.follower_end.pop(req.src, None)
                state.end_generation.pop(req.src, None)
        state.follower_gen[req.src] = req.generation
        return True

    def _answer_parked(self) -> None:
        """Answer held fetches that have news (records past the fetch offset,
        or a watermark the follower has not been told), or whose wait is over."""
        state = self.state
        if not isinstance(state, LeaderState):
            return
        for peer, parked in list(self._parked.items()):
            req = parked.request
            has_news = req.offset < self.log.end_offset or self.hwm > state.hwm_sent.get(peer, -1)
            if has_news or self.now_ms >= parked.deadline_ms:
                del self._parked[peer]
                state.hwm_sent[peer] = self.hwm
                entries = tuple(self.log.entries[req.offset : req.offset + self.config.max_fetch_records])
                self._send(
                    FetchResponse(
                        self.node_id,
                        peer,
                        self.epoch,
                        self.node_id,
                        req.offset,
                        req.last_epoch,
                        entries=entries,
                        hwm=self.hwm,
                        replica_generation=req.generation,
                        sent_ms=self.now_ms,
                    )
                )

    def _maybe_advance_hwm(self, state: LeaderState) -> None:
        voters = self.voters
        if not voters.voters:
            return
        own = self.flushed_end if Bug.ACK_BEFORE_FSYNC in self.config.bugs else self.synced_end
        counted = {
            v: (self.config.generation, own)
            if v == self.node_id
            else (state.end_generation.get(v), state.follower_end.get(v, 0) if self._counts_as_voter(state, v) else 0)
            for v in voters.ids
        }
        candidate = sorted((offset for _, offset in counted.values()), reverse=True)[voters.majority - 1]
        # Raft's commit rule: only a record of the current epoch commits by counting.
        if candidate > self.hwm and self.log.epoch_at(candidate - 1) == self.epoch:
            # Which life of each replica reported the offsets counted (the generation rule's evidence).
            self._set_hwm(candidate, [[v, g, o] for v, (g, o) in sorted(counted.items()) if o >= candidate])

    def _set_hwm(self, hwm: int, counted: list | None = None) -> None:
        self.hwm = hwm
        self._events.append(
            {"event": "commit", "epoch": self.epoch, "hwm": hwm, **({"replicas": counted} if counted else {})}
        )
        self._apply_committed()
        state = self.state
        if isinstance(state, LeaderState):
            self._answer_parked()
            last_change = self.log.last_voter_offset()
            if not self.is_voter and last_change is not None and last_change < hwm:
                # KRaft: a leader removed from the voter set steps down once that is committed.
                self._resign(state)

    def _apply_committed(self) -> None:
        while self.applied < self.hwm:
            offset = self.applied
            entry = self.log.entries[offset]
            result = self.machine.apply(entry.data)
            pending = self._pending.pop(offset, None)
            if pending is not None and not pending.acked:
                if pending.epoch == entry.epoch:
                    self._answer(pending, offset, {**result, "offset": offset, "epoch": entry.epoch})
                else:
                    self._answer(pending, offset, {"error": INDETERMINATE, "reason": "truncated"})
            self.applied += 1

    def _answer(self, pending: _Pending, offset: int, reply: dict) -> None:
        if pending.ack_when_committed is not None and "error" not in reply:
            self._events.append(
                {
                    "event": "voter-change-answered",
                    "epoch": self.epoch,
                    "offset": offset,
                    "ack_when_committed": pending.ack_when_committed,
                    "hwm": self.hwm,
                }
            )
        if isinstance(pending.request_id, _PeerRequest):
            req = pending.request_id.request
            error = reply.get("error")
            self._send(
                VoterChangeResponse(self.node_id, req.src, self.epoch, req.change, req.node, error, self.quorum.leader)
            )
        else:
            self._replies.append((pending.request_id, reply))

    def _ack_flushed_appends(self) -> None:
        """Answer what may be answered once the leader's own disk has it: voter
        changes with AckWhenCommitted=false, and (planted bug
        `ack-before-commit`) appends and writes."""
        early = Bug.ACK_BEFORE_COMMIT in self.config.bugs
        for offset, pending in self._pending.items():
            if offset < self.flushed_end and not pending.acked:
                entry = self.log.entries[offset]
                if entry.epoch != pending.epoch:
                    continue
                if pending.ack_on_write or (early and entry.data.get("op") in ("append", "write")):
                    pending.acked = True
                    self._answer(pending, offset, {"offset": offset, "epoch": entry.epoch})

    # ------------------------------------------------------------------ membership

    def _change_voters(
        self, change: str, node: str, directory: str | None, ack_when_committed: bool, request_id
    ) -> None:
        """AddRaftVoter / RemoveRaftVoter at the leader: append the new voter
        set, or refuse at once with an error naming why."""
        state = self.state
        error = None
        voters = self.voters
        last_change = self.log.last_voter_offset()
        if not isinstance(state, LeaderState):
            error = "not-leader"
        elif self.log.epoch_at(self.hwm - 1) != self.epoch:
            error = "leader-not-ready"
        elif last_change is not None and last_change >= self.hwm and Bug.MULTI_VOTER_CHANGE not in self.config.bugs:
            error = "change-in-progress"
        elif change == "add" and voters.has_node(node):
            error = "duplicate-voter"
        elif change == "add" and (
            self.now_ms - state.last_fetch_ms.get(node, -(10**12)) >= self.config.fetch_timeout_ms
            or not same_directory(state.follower_dir.get(node), directory)
        ):
            error = "replica-not-fetching"
        elif change == "remove" and not voters.has(node, directory):
            error = "voter-not-found"
        elif change == "remove" and len(voters.voters) == 1:
            error = "last-voter"
        pending = _Pending(request_id, self.epoch, ack_when_committed=ack_when_committed)
        if error is not None:
            self._answer(pending, -1, {"error": error, "leader": self.quorum.leader, "epoch": self.epoch})
            return
        new = voters.added(node, directory) if change == "add" else voters.removed(node)
        offset = self.log.end_offset
        self.log.append([Entry(self.epoch, {**new.record(), "change": [change, node, directory]})])
        self._announce_voters()
        pending.ack_on_write = not ack_when_committed or Bug.ACK_VOTER_EARLY in self.config.bugs
        self._pending[offset] = pending
        self._answer_parked()

    def _handle_voter_change_request(self, req: VoterChangeRequest) -> None:
        self._change_voters(req.change, req.node, req.directory, req.ack_when_committed, _PeerRequest(req))

    def _handle_voter_change_response(self, resp: VoterChangeResponse) -> None:
        if self._change_in_flight is not None and self._change_in_flight[0] == resp.src:
            self._change_in_flight = None
            if resp.error is not None:
                self._next_join_ms = self.now_ms + self.config.election_timeout_ms

    def _connection_busy(self, peer: str) -> bool:
        """Is a voter change to `peer` still waiting for its answer? Kafka
        holds one request per connection, so nothing else goes to that peer."""
        if self._change_in_flight is None or self._change_in_flight[0] != peer:
            return False
        if self.now_ms - self._change_in_flight[1] < self.config.voter_change_timeout_ms:
            return True
        self._change_in_flight = None
        self._next_join_ms = self.now_ms + self.config.election_timeout_ms
        return False

    def _join_request(self, state: FollowerState) -> VoterChangeRequest | None:
        """`auto_join`: the AddRaftVoter an observer should send now, if any;
        first a RemoveRaftVoter of its own node id under an old directory."""
        if not self.config.auto_join or not state.has_fetched or self.now_ms < self._next_join_ms or self.is_voter:
            return None
        voters = self.voters
        if voters.has_node(self.node_id):
            change, directory = "remove", voters.directory_of(self.node_id)
        else:
            change, directory = "add", self.config.directory_id
        ack = self.config.ack_when_committed_always
        return VoterChangeRequest(self.node_id, state.leader, self.epoch, change, self.node_id, directory, ack)

    def _maybe_fetch(self) -> None:
        state = self.state
        if not isinstance(state, FollowerState) or self._connection_busy(state.leader):
            return
        if (
            state.fetch_in_flight_ms is not None
            and self.now_ms - state.fetch_in_flight_ms < self.config.request_timeout_ms
        ):
            return
        join = self._join_request(state)
        if join is not None:
            self._change_in_flight = (state.leader, self.now_ms)
            self._send(join)
            return
        state.fetch_in_flight_ms = self.now_ms
        self._send(self._fetch_request(state.leader))

    def _fetch_request(self, peer: str) -> FetchRequest:
        state = self.state
        return FetchRequest(
            self.node_id,
            peer,
            self.epoch,
            self.log.end_offset,
            self.log.last_epoch,
            self.config.directory_id,
            self.config.generation,
            state.answered_ms if isinstance(state, FollowerState) and state.leader == peer else None,
        )

    def _handle_fetch_response(self, resp: FetchResponse) -> None:
        state = self.state
        if resp.epoch != self.epoch:
            return
        if not isinstance(state, FollowerState):
            if resp.leader not in (None, self.node_id, state.leader) and isinstance(
                state, (UnattachedState, ProspectiveState)
            ):
                self._become_follower(self.epoch, resp.leader)
            return
        if resp.src != state.leader or resp.error is not None:
            return
        if resp.fetch_offset != self.log.end_offset or resp.fetch_last_epoch != self.log.last_epoch:
            return
        state.fetch_in_flight_ms = None
        state.has_fetched = True
        state.fetch_deadline_ms = self.now_ms + self.config.fetch_timeout_ms
        state.answered_ms = resp.sent_ms
        if resp.diverging_epoch is not None:
            _, own_end = self.log.end_offset_for_epoch(resp.diverging_epoch)
            self._truncate(min(resp.diverging_offset or 0, own_end))
            return
        self.log.append(resp.entries)
        self._caught_up(resp.hwm)
        new_hwm = min(resp.hwm, self.log.end_offset)
        if new_hwm > self.hwm:
            self._set_hwm(new_hwm)
        self._announce_voters()

    def _truncate(self, offset: int) -> None:
        dropped = self.log.truncate(offset)
        if not dropped:
            return
        self._events.append({"event": "truncate", "epoch": self.epoch, "offset": offset, "hwm": self.hwm})
        for pending_offset in [o for o in self._pending if o >= offset]:
            pending = self._pending.pop(pending_offset)
            if not pending.acked:
                self._answer(pending, pending_offset, {"error": INDETERMINATE, "reason": "truncated"})
        self.hwm = min(self.hwm, offset)
        if offset < self.applied:
            # Only a broken node truncates committed records; rebuild honestly
            # so the violation shows in what it reports.
            self.machine = RegisterMachine()
            self.applied = 0
            self._apply_committed()
        self.flushed_end = min(self.flushed_end, offset)
        self.synced_end = min(self.synced_end, offset)
        self._announce_voters()

    def _announce_voters(self) -> None:
        """A `voters` event whenever the voter set in force changes (appended,
        received or truncated away), with the high watermark and the state at
        that moment: a change a leader takes while the one before it is
        uncommitted shows in it (a follower catching up may receive both
        before it learns the high watermark, which is no fault)."""
        offset = self.log.last_voter_offset()
        if offset != self._announced_voters:
            self._announced_voters = offset
            self._events.append(
                {
                    "event": "voters",
                    "epoch": self.epoch,
                    "state": self.state.name,
                    "offset": offset,
                    "hwm": self.hwm,
                    "voters": [list(v) for v in self.voters.voters],
                }
            )

    def _send(self, msg: Message) -> None:
        self._messages.append(msg)


__all__ = ["BUGS", "Bug", "INDETERMINATE", "RaftConfig", "RaftCore", "Ready"]
