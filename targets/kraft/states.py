"""One class per KIP-996 quorum state (final revision).

Each holds only what its role needs, plus its deadline in milliseconds on the
core's clock. `voted_for` lives in the states that may carry a vote in the
current epoch (Unattached, Prospective, Follower) and is implied by the others
(a Candidate, Leader or Resigned node voted for itself).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class UnattachedState:
    """No leader known in `epoch`; after `election_deadline_ms` it becomes Prospective."""

    epoch: int
    voted_for: str | None
    election_deadline_ms: int
    name: str = "unattached"

    @property
    def leader(self) -> str | None:
        return None


@dataclass
class ProspectiveState:
    """Canvassing with Pre-Votes at the unbumped `epoch` (KIP-996).

    `leader` is the leader it knew as a Follower, if any: losing the Pre-Vote
    sends it back to following that leader, else to Unattached.
    """

    epoch: int
    voted_for: str | None
    leader: str | None
    election_deadline_ms: int
    granted: set[str] = field(default_factory=set)
    rejected: set[str] = field(default_factory=set)
    unclean: set[str] = field(default_factory=set)  # granted by voters that recovered uncleanly
    requests_sent_ms: int = 0
    name: str = "prospective"


class _VotedForItself:
    """Candidate and Resigned: the vote of the epoch went to the node itself, and no leader is known."""

    node_id: str

    @property
    def voted_for(self) -> str:
        return self.node_id

    @property
    def leader(self) -> str | None:
        return None


@dataclass
class CandidateState(_VotedForItself):
    """Asking for standard votes at a bumped epoch; it voted for itself."""

    epoch: int
    node_id: str
    election_deadline_ms: int
    granted: set[str] = field(default_factory=set)
    rejected: set[str] = field(default_factory=set)
    unclean: set[str] = field(default_factory=set)  # granted by voters that recovered uncleanly
    requests_sent_ms: int = 0
    name: str = "candidate"


@dataclass
class LeaderState:
    """Leading `epoch`.

    `follower_end` is each replica's log end offset as its last valid fetch
    reported it, and `follower_dir` the directory id that fetch came from;
    `last_fetch_ms` when each replica last fetched (check-quorum counts the
    voters' fetches); `answered_ms` when this leader sent the latest answer
    each replica's fetch says it took (a read lease counts those); `begin_sent_ms` when BeginQuorumEpoch was last sent to a
    voter that has not fetched yet; `hwm_sent` the high watermark each voter
    was last told, so a held fetch is answered when the watermark moves.
    """

    epoch: int
    node_id: str
    start_ms: int
    follower_end: dict[str, int] = field(default_factory=dict)
    follower_dir: dict[str, str | None] = field(default_factory=dict)
    # KIP-380: the latest generation heard from each replica, and the one whose fetch set `follower_end`.
    follower_gen: dict[str, int] = field(default_factory=dict)
    end_generation: dict[str, int] = field(default_factory=dict)
    last_fetch_ms: dict[str, int] = field(default_factory=dict)
    answered_ms: dict[str, int] = field(default_factory=dict)
    begin_sent_ms: dict[str, int] = field(default_factory=dict)
    hwm_sent: dict[str, int] = field(default_factory=dict)
    name: str = "leader"

    @property
    def voted_for(self) -> str:
        return self.node_id

    @property
    def leader(self) -> str:
        return self.node_id


@dataclass
class FollowerState:
    """Following `leader` in `epoch`.

    `has_fetched` turns true at the first successful fetch from the leader in
    this state: from then on it rejects Pre-Votes (KIP-996). After
    `fetch_deadline_ms` without a successful fetch it becomes Prospective.
    `answered_ms` is the leader's `sent_ms` of the last answer it took, which
    its next fetch echoes.
    """

    epoch: int
    leader: str
    voted_for: str | None
    fetch_deadline_ms: int
    has_fetched: bool = False
    fetch_in_flight_ms: int | None = None
    answered_ms: int | None = None
    name: str = "follower"


@dataclass
class ResignedState(_VotedForItself):
    """A leader that gave up `epoch` (check-quorum or shutdown). After
    `election_deadline_ms` it becomes Unattached at epoch + 1 (KIP-996).
    Until then it sends its EndQuorumEpoch again, a request timeout apart,
    to each voter that has not answered it (`acknowledged`), as KRaft's
    `unackedVoters`; `notice_sent_ms` is when each was last sent it."""

    epoch: int
    node_id: str
    election_deadline_ms: int
    successors: tuple[str, ...] = ()
    notice_sent_ms: dict[str, int] = field(default_factory=dict)
    acknowledged: set[str] = field(default_factory=set)
    name: str = "resigned"


QuorumRole = UnattachedState | ProspectiveState | CandidateState | LeaderState | FollowerState | ResignedState
