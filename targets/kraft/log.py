"""The replicated log as the core sees it: a list of entries in memory.

The core only ever appends at the end or truncates a suffix; it tells the
shell which suffix changed (`dirty_from`) so the shell rewrites just that on
disk. Offsets count records from 0; the log end offset is the record count.
"""

from __future__ import annotations

from .messages import Entry
from .voters import VoterSet, is_voters_record


class ReplicatedLog:
    def __init__(self, entries: list[Entry] | None = None) -> None:
        self.entries: list[Entry] = list(entries or [])
        # Lowest offset changed since the shell last persisted the log; the
        # shell truncates its file there and writes entries[dirty_from:].
        self.dirty_from: int = len(self.entries)
        # Offsets of voters records, in order: the last one is the voter set in force.
        self.voter_offsets: list[int] = [o for o, e in enumerate(self.entries) if is_voters_record(e.data)]
        # The latest voters record and the set read from it: the set is read
        # again only when another record is the latest (asked on every tick).
        self._voters_entry: Entry | None = None
        self._voters = VoterSet()

    def voter_set(self) -> VoterSet:
        """The latest voter set in the log, committed or not; empty without one."""
        entry = self.entries[self.voter_offsets[-1]] if self.voter_offsets else None
        if entry is not self._voters_entry:
            self._voters_entry = entry
            self._voters = VoterSet() if entry is None else VoterSet.from_record(entry.data)
        return self._voters

    def last_voter_offset(self) -> int | None:
        return self.voter_offsets[-1] if self.voter_offsets else None

    @property
    def end_offset(self) -> int:
        return len(self.entries)

    @property
    def last_epoch(self) -> int:
        return self.entries[-1].epoch if self.entries else 0

    def epoch_at(self, offset: int) -> int:
        """Epoch of the record at `offset`; 0 for offset -1 (the empty prefix)."""
        return self.entries[offset].epoch if offset >= 0 else 0

    def append(self, entries: list[Entry] | tuple[Entry, ...]) -> None:
        for entry in entries:
            if is_voters_record(entry.data):
                self.voter_offsets.append(len(self.entries))
            self.entries.append(entry)

    def truncate(self, offset: int) -> int:
        """Drop records at `offset` and after; returns how many were dropped."""
        dropped = max(0, len(self.entries) - offset)
        if dropped:
            del self.entries[offset:]
            self.dirty_from = min(self.dirty_from, offset)
            while self.voter_offsets and self.voter_offsets[-1] >= offset:
                self.voter_offsets.pop()
        return dropped

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """KRaft's `endOffsetForEpoch`: the largest epoch in this log that is
        <= `epoch`, and the offset where that epoch's records end (the start of
        the next epoch, or the log end). (0, 0) if there is no such epoch."""
        for offset in range(len(self.entries) - 1, -1, -1):
            if self.entries[offset].epoch <= epoch:
                return self.entries[offset].epoch, offset + 1
        return 0, 0

    def is_up_to_date(self, last_epoch: int, last_offset: int) -> bool:
        """Raft's election restriction: is a log ending at (last_epoch,
        last_offset) at least as up to date as this one?"""
        return (last_epoch, last_offset) >= (self.last_epoch, self.end_offset)
