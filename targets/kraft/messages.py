"""Raft messages between nodes, and their JSON wire form.

Every message is one-way and carries its sender and receiver: a response is
just another message going the other way. That keeps a directed link i->j of
the link mesh carrying exactly what i says to j, so a one-way cut is a one-way
cut of the protocol too.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any


@dataclass(frozen=True)
class Entry:
    """One log record: the epoch of the leader that appended it, and its data.

    `data` is a JSON object; its "op" names what it is (`leader` for the
    record a new leader appends, `append`, `write`, `cas`, `read`).
    """

    epoch: int
    data: dict


@dataclass(frozen=True)
class VoteRequest:
    """A Pre-Vote (`pre_vote`, at the sender's unbumped epoch) or a standard vote.

    `last_epoch`/`last_offset` describe the sender's log (epoch of its last
    record, and its log end offset) for the "at least as up to date" rule.
    `voter_directory` is the directory id the sender's voter set gives the
    receiver (KIP-853): a receiver with another directory is not that voter.
    """

    src: str
    dst: str
    epoch: int
    last_epoch: int
    last_offset: int
    pre_vote: bool
    voter_directory: str | None = None


@dataclass(frozen=True)
class VoteResponse:
    """Whether the vote (or Pre-Vote) was granted; `leader` is who the
    responder believes leads `epoch`, so a Prospective can go back to following.
    `unclean`: the responder recovered uncleanly, and its vote elects only
    where every voter's does (see RaftCore._still_catching_up)."""

    src: str
    dst: str
    epoch: int
    granted: bool
    pre_vote: bool
    leader: str | None = None
    unclean: bool = False


@dataclass(frozen=True)
class BeginQuorumEpoch:
    """Sent by a new leader (the sender) to every voter; `replica_generation`
    is the receiver's generation as the leader knows it (None: not yet)."""

    src: str
    dst: str
    epoch: int
    replica_generation: int | None = None


@dataclass(frozen=True)
class EndQuorumEpoch:
    """Sent by a resigning leader; `successors` are voters in the order it
    prefers them to take over (most caught up first), as in KRaft."""

    src: str
    dst: str
    epoch: int
    successors: tuple[str, ...] = ()


@dataclass(frozen=True)
class EndQuorumEpochResponse:
    """A voter's answer to EndQuorumEpoch, at the voter's epoch: the
    resigned leader sends it the notice no more (KRaft's
    `acknowledgeEndQuorumEpoch`)."""

    src: str
    dst: str
    epoch: int


@dataclass(frozen=True)
class FetchRequest:
    """Pull replication: "I have `offset` records, the last of epoch `last_epoch`",
    from the replica whose data directory is `directory`, in its life `generation`;
    `answered_ms` echoes the `sent_ms` of the last answer it took from this
    leader (a read lease counts the fetch from then, not from its arrival)."""

    src: str
    dst: str
    epoch: int
    offset: int
    last_epoch: int
    directory: str | None = None
    generation: int = 0
    answered_ms: int | None = None


@dataclass(frozen=True)
class FetchResponse:
    """The leader's answer to a fetch.

    Exactly one of: `error` (not the leader of `epoch`; `leader` says who is,
    if known), a divergence (`diverging_epoch`/`diverging_offset`: truncate to
    there and fetch again), or records `entries` starting at `fetch_offset`
    (possibly none) with the leader's high watermark `hwm`. `fetch_offset` and
    `fetch_last_epoch` echo the request so a stale answer can be recognised,
    and `replica_generation` the fetcher's generation (KIP-380): a replica
    refuses an answer meant for an earlier life of itself. `sent_ms` is the
    leader's clock as it sent the answer.
    """

    src: str
    dst: str
    epoch: int
    leader: str | None
    fetch_offset: int
    fetch_last_epoch: int
    error: str | None = None
    entries: tuple[Entry, ...] = ()
    hwm: int = 0
    diverging_epoch: int | None = None
    diverging_offset: int | None = None
    replica_generation: int | None = None
    sent_ms: int | None = None


@dataclass(frozen=True)
class VoterChangeRequest:
    """AddRaftVoter (`change` "add") or RemoveRaftVoter ("remove") of replica
    (`node`, `directory`), sent to the leader by a replica that auto-joins.
    `ack_when_committed` (KIP-1186's AckWhenCommitted): answer once the new
    voter set is committed, or already once the leader has written it."""

    src: str
    dst: str
    epoch: int
    change: str
    node: str
    directory: str | None
    ack_when_committed: bool = True


@dataclass(frozen=True)
class VoterChangeResponse:
    """The leader's answer: `error` None when the change was made (committed
    or written, as asked), else why not; `leader` as the responder knows it."""

    src: str
    dst: str
    epoch: int
    change: str
    node: str
    error: str | None = None
    leader: str | None = None


Message = (
    VoteRequest
    | VoteResponse
    | BeginQuorumEpoch
    | EndQuorumEpoch
    | EndQuorumEpochResponse
    | FetchRequest
    | FetchResponse
    | VoterChangeRequest
    | VoterChangeResponse
)

_TYPES: dict[str, type] = {
    cls.__name__: cls
    for cls in (
        VoteRequest,
        VoteResponse,
        BeginQuorumEpoch,
        EndQuorumEpoch,
        EndQuorumEpochResponse,
        FetchRequest,
        FetchResponse,
        VoterChangeRequest,
        VoterChangeResponse,
    )
}


def encode(msg: Message) -> dict[str, Any]:
    """The message as a JSON-ready dict with a `type` field. Shallow: a
    record's data is the message's own, not a copy (dataclasses.asdict's
    deep copy was a sixth of a leader's time under load)."""
    out = dict(vars(msg))
    if isinstance(msg, FetchResponse):
        out["entries"] = [{"epoch": entry.epoch, "data": entry.data} for entry in msg.entries]
    out["type"] = type(msg).__name__
    return out


def decode(obj: dict[str, Any]) -> Message:
    """The message a dict made by `encode` describes; ValueError if it is not one."""
    obj = dict(obj)
    try:
        cls = _TYPES[obj.pop("type")]
    except KeyError as exc:
        raise ValueError(f"unknown message type in {obj!r}") from exc
    names = {f.name for f in fields(cls)}
    unknown = set(obj) - names
    if unknown:
        raise ValueError(f"{cls.__name__} has no fields {sorted(unknown)}")
    if cls is FetchResponse:
        obj["entries"] = tuple(Entry(e["epoch"], e["data"]) for e in obj.get("entries", ()))
    if cls is EndQuorumEpoch:
        obj["successors"] = tuple(obj.get("successors", ()))
    return cls(**obj)


__all__ = [
    "Entry",
    "VoteRequest",
    "VoteResponse",
    "BeginQuorumEpoch",
    "EndQuorumEpoch",
    "EndQuorumEpochResponse",
    "FetchRequest",
    "FetchResponse",
    "VoterChangeRequest",
    "VoterChangeResponse",
    "Message",
    "encode",
    "decode",
]
