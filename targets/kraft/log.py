"""The replicated log as the core sees it: a sequence of entries.

The core only ever appends at the end or truncates a suffix; it tells the
shell which suffix changed (`dirty_from`) so the shell rewrites just that on
disk. Offsets count records from 0; the log end offset is the record count.
Every record's epoch is kept apart from the records, so that the questions
asked of epochs (on every fetch) read no record: the shell's log
(`log_index.StoredRecords`) reads records from disk when asked, and says
the epochs and voters records it starts with.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator
from typing import Any, Protocol

from .messages import Entry
from .voters import VoterSet, is_voters_record


class Records(Protocol):
    """What the log needs of the sequence holding its records (a list will do)."""

    def __len__(self) -> int: ...
    def __iter__(self) -> Iterator[Entry]: ...
    def __getitem__(self, key: Any) -> Any: ...
    def __delitem__(self, key: slice) -> None: ...
    def append(self, entry: Entry) -> None: ...


class ReplicatedLog:
    def __init__(self, entries: Records | tuple[Entry, ...] | None = None) -> None:
        # A list is copied (its caller keeps its own); the shell's stored log is taken as it is.
        self.entries: Records = (
            list(entries or ()) if entries is None or isinstance(entries, (list, tuple)) else entries
        )
        # Lowest offset changed since the shell last persisted the log; the
        # shell truncates its file there and writes entries[dirty_from:].
        self.dirty_from: int = len(self.entries)
        known = getattr(self.entries, "epochs", None)
        self.epochs = array("q", known if known is not None else (e.epoch for e in self.entries))
        # Offsets of voters records, in order: the last one is the voter set in force.
        known = getattr(self.entries, "voter_offsets", None)
        self.voter_offsets: list[int] = (
            list(known) if known is not None else [o for o, e in enumerate(self.entries) if is_voters_record(e.data)]
        )
        # The offset of the latest voters record and the set read from it: the
        # set is read again only when another record is the latest (asked on
        # every tick), or that one was truncated away.
        self._voters_at: int | None = None
        self._voters = VoterSet()

    def voter_set(self) -> VoterSet:
        """The latest voter set in the log, committed or not; empty without one."""
        offset = self.voter_offsets[-1] if self.voter_offsets else None
        if offset != self._voters_at:
            self._voters_at = offset
            self._voters = VoterSet() if offset is None else VoterSet.from_record(self.entries[offset].data)
        return self._voters

    def last_voter_offset(self) -> int | None:
        return self.voter_offsets[-1] if self.voter_offsets else None

    @property
    def end_offset(self) -> int:
        return len(self.entries)

    @property
    def last_epoch(self) -> int:
        return self.epochs[-1] if self.epochs else 0

    def epoch_at(self, offset: int) -> int:
        """Epoch of the record at `offset`; 0 for offset -1 (the empty prefix)."""
        return self.epochs[offset] if offset >= 0 else 0

    def append(self, entries: list[Entry] | tuple[Entry, ...]) -> None:
        for entry in entries:
            if is_voters_record(entry.data):
                self.voter_offsets.append(len(self.entries))
            self.entries.append(entry)
            self.epochs.append(entry.epoch)

    def truncate(self, offset: int) -> int:
        """Drop records at `offset` and after; returns how many were dropped."""
        dropped = max(0, len(self.entries) - offset)
        if dropped:
            del self.entries[offset:]
            del self.epochs[offset:]
            self.dirty_from = min(self.dirty_from, offset)
            while self.voter_offsets and self.voter_offsets[-1] >= offset:
                self.voter_offsets.pop()
            if self._voters_at is not None and self._voters_at >= offset:
                self._voters_at, self._voters = None, VoterSet()
        return dropped

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """KRaft's `endOffsetForEpoch`: the largest epoch in this log that is
        <= `epoch`, and the offset where that epoch's records end (the start of
        the next epoch, or the log end). (0, 0) if there is no such epoch."""
        for offset in range(len(self.epochs) - 1, -1, -1):
            if self.epochs[offset] <= epoch:
                return self.epochs[offset], offset + 1
        return 0, 0

    def is_up_to_date(self, last_epoch: int, last_offset: int) -> bool:
        """Raft's election restriction: is a log ending at (last_epoch,
        last_offset) at least as up to date as this one?"""
        return (last_epoch, last_offset) >= (self.last_epoch, self.end_offset)
