"""What lets a node start on a long log without reading every record: Kafka's
recovery point, an index of the log's records, and records decoded only
when they are read.

A node's start used to decode every record of its log.bin into an object,
so it grew with the log (49 s for 3.5M records) and held a Python object
per record. Kafka starts in time that does not grow so: it checks only the
log after its recovery point (the offset up to which the log was flushed
when last checkpointed) and reads records from disk when they are asked for.

Files, beside log.bin:
    log.index          per record two native 8-byte integers: the byte where
                       the record ends in log.bin, and its epoch
    recovery-point.json
                       {"records", "bytes", "voter_offsets"}: how many records
                       the index holds and log.bin held, fsynced, when it was
                       written, and which of them are voters records; and the
                       state machine then (`Snapshot`): "applied", the epoch
                       of the last applied record, "registers"

Both are written only from records already fsynced to log.bin, the index
fsynced before the recovery point names it, and the recovery point lowered
(durably) before the log is cut below it. Both are derived: a missing,
damaged or disagreeing one means the whole log is checked, as before.
"""

from __future__ import annotations

import json
import os
import struct
import zlib
from array import array
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .messages import Entry

# The end of a log is always checked, however recent its recovery point: a
# damaged tail (the nemesis's `corrupt` hits a log's last 64 bytes) is found
# on start, where it is cut back, and never when a record is read later.
ALWAYS_CHECKED_BYTES = 64 * 1024
# A log.bin record's header: the payload's length and CRC-32, big-endian.
HEADER = struct.Struct(">II")
# Stored records read by one at a time (the state machine catching up, record
# by record) are read from disk this many at once, and kept till the next.
READ_AHEAD = 512


class StorageError(Exception):
    """A file of the data directory is corrupt or truncated; the message names it."""


@dataclass(frozen=True)
class Snapshot:
    """The state machine after applying the log's first `applied` records."""

    applied: int
    applied_epoch: int
    registers: dict


@dataclass(frozen=True)
class RecoveryPoint:
    records: int
    ends: array  # byte end of each indexed record
    epochs: array
    voter_offsets: list[int]
    snapshot: Snapshot | None


def read_recovery_point(directory: Path, log_size: int) -> RecoveryPoint | None:
    """The recovery point and its index, if both are whole and agree with a
    log of `log_size` bytes; else None (the log is then checked in full)."""
    try:
        value = json.loads((directory / "recovery-point.json").read_text(encoding="utf-8"))
        records, end = int(value["records"]), int(value["bytes"])
        voter_offsets = [int(o) for o in value["voter_offsets"]]
        index = array("q")
        with open(directory / "log.index", "rb") as f:
            index.frombytes(f.read(records * 2 * index.itemsize))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    ends, epochs = index[0::2], index[1::2]
    if len(ends) != records or end > log_size or (records and ends[-1] != end):
        return None
    snapshot = None
    if isinstance(value.get("registers"), dict):
        snapshot = Snapshot(int(value["applied"]), int(value["applied_epoch"]), value["registers"])
    return RecoveryPoint(records, ends, epochs, voter_offsets, snapshot)


def write_index(path: Path, first: int, records: int, ends: array, epochs: array) -> None:
    """Make log.index hold records [0, records), writing from record `first`
    (those before it are there already), fsynced."""
    pairs = array("q", bytes(2 * (records - first) * ends.itemsize))
    pairs[0::2], pairs[1::2] = ends[first:records], epochs[first:records]
    with open(path, "r+b" if path.exists() else "wb") as f:
        f.seek(first * 2 * ends.itemsize)
        f.write(pairs.tobytes())
        f.truncate()
        f.flush()
        os.fsync(f.fileno())


def recovery_point_text(records: int, end: int, voter_offsets: list[int], snapshot: Snapshot | None) -> str:
    value = {"records": records, "bytes": end, "voter_offsets": [o for o in voter_offsets if o < records]}
    if snapshot is not None:
        value.update(applied=snapshot.applied, applied_epoch=snapshot.applied_epoch, registers=snapshot.registers)
    return json.dumps(value) + "\n"


def read_record(data: bytes, position: int) -> tuple[Entry | None, int, str | None]:
    """The log record at `position` and where the next begins, or what is wrong with it."""
    if position + HEADER.size > len(data):
        return None, position, f"torn header ({len(data) - position} of {HEADER.size} bytes)"
    length, crc = HEADER.unpack_from(data, position)
    end = position + HEADER.size + length
    payload = data[position + HEADER.size : end]
    if len(payload) < length:
        return None, position, f"torn record ({len(payload)} of {length} bytes)"
    if zlib.crc32(payload) != crc:
        return None, position, "checksum mismatch"
    try:
        record = json.loads(payload)
        return Entry(int(record["epoch"]), dict(record["data"])), end, None
    except (ValueError, KeyError, TypeError):
        return None, position, "checksum matches but the record is not an entry"


def trusted_records(point: RecoveryPoint, log_size: int) -> int:
    """How many records below the recovery point need no check: those that
    end before the log's last `ALWAYS_CHECKED_BYTES`."""
    return bisect_right(point.ends, log_size - ALWAYS_CHECKED_BYTES)


class StoredRecords(Sequence):
    """The log's records as the core reads them: the first `count` read from
    log.bin when asked for (by their byte ends), the rest held as entries.
    The core appends at the end and deletes a suffix, as with a list. What
    the log held at start is known without decoding a record: `epochs` (of
    every record) and `voter_offsets` (of the voters records)."""

    def __init__(
        self, path: Path, ends: array, count: int, entries: list[Entry], epochs: array, voter_offsets: list[int]
    ) -> None:
        self.path = path
        self.epochs = epochs
        self.voter_offsets = voter_offsets
        self._fd = os.open(path, os.O_RDONLY) if count else -1
        self._ends = ends
        self._count = count
        self._entries = entries
        # The last records read ahead: the offset of the first, and them.
        self._ahead_from = 0
        self._ahead: list[Entry] = []

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __len__(self) -> int:
        return self._count + len(self._entries)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and list(self) == list(other)

    def __getitem__(self, key):
        if isinstance(key, slice):
            start, stop, step = key.indices(len(self))
            if step != 1:
                raise TypeError("a log's records are read in order")
            if start >= stop:
                return []
            stored = self._read(start, min(stop, self._count)) if start < self._count else []
            return stored + self._entries[max(start, self._count) - self._count : max(stop, self._count) - self._count]
        if key < 0:
            key += len(self)
        if not 0 <= key < len(self):
            raise IndexError("log offset out of range")
        if key >= self._count:
            return self._entries[key - self._count]
        if not self._ahead_from <= key < self._ahead_from + len(self._ahead):
            self._ahead_from, self._ahead = key, self._read(key, min(key + READ_AHEAD, self._count))
        return self._ahead[key - self._ahead_from]

    def append(self, entry: Entry) -> None:
        self._entries.append(entry)

    def __delitem__(self, key) -> None:
        if not isinstance(key, slice) or key.stop is not None or key.step is not None:
            raise TypeError("only a suffix of the log can be deleted")
        start = min(max(0, key.start or 0), len(self))
        if start < self._count:
            self._count = start
            self._entries.clear()
        else:
            del self._entries[start - self._count :]

    def _read(self, first: int, stop: int) -> list[Entry]:
        """Records [first, stop) of the stored part, in one read, each checked."""
        begin = self._ends[first - 1] if first else 0
        data = os.pread(self._fd, self._ends[stop - 1] - begin, begin)
        out = []
        for offset in range(first, stop):
            at = (self._ends[offset - 1] if offset else 0) - begin
            entry, _, problem = read_record(data, at)
            if entry is None:
                raise StorageError(
                    f"{self.path}: record {offset} at byte offset {at + begin} changed on disk: {problem}"
                )
            out.append(entry)
        return out
