"""A node's durable state in its data directory, with the write order Raft needs.

Files:
    quorum-state.json  {"epoch", "voted_for", "leader"}; replaced atomically
                       (write a temporary file, fsync, rename, fsync the directory)
    generation         the life counter (KIP-380's idea), incremented and fsynced at start
    directory-id       made once, when the directory is formatted (by `format_data_dir`,
                       or by the node itself on an empty directory); a wiped disk gets a new one
    log.bin            the replicated log: per record a 4-byte big-endian length,
                       a 4-byte CRC-32 of the payload, then the payload (JSON of
                       {"epoch", "data"}); appended and truncated, fsynced each time
                       (with a flush interval, a follower's writes on a timer)
    clean-shutdown     there while the node is stopped after a clean shutdown; a start
                       without it, on a disk that held a life before, is unclean
    catching-up        there from a start that cut the log back until the node has
                       caught up with a leader's high watermark (what was cut, as JSON)
    log.index, recovery-point.json
                       what spares a start most of the log (`log_index`): the
                       records' ends and epochs, and a snapshot of the state
                       machine, as of a moment when they were fsynced

A formatted directory may start its log with the bootstrap voters record
(KIP-853's bootstrap checkpoint): the initial voter set, or this node alone
for a standalone start. An empty directory formats itself with no such
record, so a node whose disk was lost comes back as an observer and is never
bootstrapped a second time.

A log whose tail is torn (a record cut short) or damaged (a checksum that
does not match, a record that is not an entry) is truncated on start to the
last valid record before the damage, as Kafka's log recovery does (checking
the records after the recovery point, and always the log's last 64 KiB), and
`DataDir.truncated` says what went: the node then may lack records it
reported, so it neither votes nor campaigns until it has caught up
(`RaftConfig.truncated_log`). That holds across restarts (`catching-up`,
`must_catch_up`): a node cut back, then restarted before it caught up,
starts on a valid log that still lacks those records (a novelty run of the
correct node lost a commit so: cut back, power lost, then elected). Anything else unreadable on start raises
`StorageError` naming the file and the byte offset: a node never silently
starts from a reset state.
"""

from __future__ import annotations

import contextlib
import json
import os
import uuid
import zlib
from array import array
from pathlib import Path

from .log_index import (
    HEADER,
    Snapshot,
    StorageError,
    StoredRecords,
    read_record,
    read_recovery_point,
    recovery_point_text,
    trusted_records,
    write_index,
)
from .messages import Entry
from .quorum_state import ElectionState
from .voters import ReplicaKey, VoterSet, is_voters_record

__all__ = ["DataDir", "Snapshot", "StorageError", "format_data_dir", "new_directory_id"]


def _write_atomically(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with _naming(path), open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    _fsync_dir(path.parent)


@contextlib.contextmanager
def _naming(path: Path):
    """A failed write (a full disk) names the file it was for."""
    try:
        yield
    except OSError as error:
        if error.filename is None:
            raise OSError(error.errno, error.strerror, str(path)) from error
        raise


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _read_json(path: Path) -> dict:
    text = path.read_text(encoding="utf-8")
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise StorageError(f"{path}: corrupt JSON at byte offset {error.pos}: {error.msg}") from None
    if not isinstance(value, dict):
        raise StorageError(f"{path}: corrupt at byte offset 0: expected a JSON object")
    return value


def new_directory_id() -> str:
    return uuid.uuid4().hex


def format_data_dir(path: str | os.PathLike, directory_id: str, voters: tuple[ReplicaKey, ...] = ()) -> None:
    """Format a new data directory with its directory id and, when `voters`
    is given, the bootstrap voters record; an already formatted one is refused."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    if (path / "directory-id").exists():
        raise StorageError(f"{path / 'directory-id'}: already formatted")
    if len(directory_id) != 32:
        raise StorageError(f"{path / 'directory-id'}: {directory_id!r} is not a directory id (32 hex digits)")
    if voters:
        with open(path / "log.bin", "wb") as log:
            log.write(_encode(Entry(0, VoterSet.of(voters).record())))
            log.flush()
            os.fsync(log.fileno())
    _write_atomically(path / "directory-id", directory_id + "\n")


def _encode(entry: Entry) -> bytes:
    payload = json.dumps({"epoch": entry.epoch, "data": entry.data}, separators=(",", ":")).encode()
    return HEADER.pack(len(payload), zlib.crc32(payload)) + payload


class DataDir:
    """The data directory of one node; opening it starts a new generation."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        self.quorum_path = self.path / "quorum-state.json"
        self.generation_path = self.path / "generation"
        self.directory_id_path = self.path / "directory-id"
        self.log_path = self.path / "log.bin"
        self.index_path = self.path / "log.index"
        self.recovery_point_path = self.path / "recovery-point.json"
        self.directory_id = self._load_directory_id()
        self.election_state = self._load_election_state()
        # The log as found at start (the core owns it from then on); the byte
        # end and epoch of every record, and the voters records, as written
        # since; what a damaged tail lost; the state machine's last snapshot.
        self.truncated: dict | None = None
        self._ends, self._epochs = array("q"), array("q")
        self._voter_offsets: list[int] = []
        self.snapshot: Snapshot | None = None
        # Records the recovery point on disk names, and of those how many log.index is known to hold.
        self._named = self._indexed = 0
        self.entries = self._load_log()
        # How many records are fsynced: all that were read.
        self._synced = len(self._ends)
        # Cut back now, or in a life that ended before it caught up: the log may lack records it reported.
        self.catching_up_path = self.path / "catching-up"
        if self.truncated is not None:
            _write_atomically(self.catching_up_path, json.dumps(self.truncated) + "\n")
        self.must_catch_up = self.catching_up_path.exists()
        previous = self._load_generation()
        self.generation = previous + 1
        clean_path = self.path / "clean-shutdown"
        # A life before this one that left no mark of a clean shutdown may have lost unfsynced writes.
        self.unclean = previous > 0 and not clean_path.exists()
        clean_path.unlink(missing_ok=True)
        _write_atomically(self.generation_path, f"{self.generation}\n")
        self._log = open(self.log_path, "ab")
        # What was read is what a power loss would leave from now on.
        os.fsync(self._log.fileno())
        self.unsynced = False

    def caught_up(self) -> None:
        """The log reached a leader's high watermark: later starts need not wait for one."""
        if self.must_catch_up:
            self.catching_up_path.unlink(missing_ok=True)
            _fsync_dir(self.path)
            self.must_catch_up = False

    def close(self, clean: bool = False) -> None:
        """Close the log; after a clean shutdown, fsynced and marked so."""
        if clean:
            self.sync()
            _write_atomically(self.path / "clean-shutdown", f"{self.generation}\n")
        self._log.close()
        self.entries.close()

    def sync(self) -> None:
        """fsync what was written without it."""
        if self.unsynced:
            with _naming(self.log_path):
                os.fsync(self._log.fileno())
            self.unsynced = False
        self._synced = len(self._ends)

    def checkpoint(self, snapshot: Snapshot | None) -> None:
        """Move the recovery point up to the records fsynced so far, with the
        state machine's `snapshot` where it lies within them (else the last
        one that does)."""
        records = self._synced
        with _naming(self.index_path):
            write_index(self.index_path, min(self._indexed, records), records, self._ends, self._epochs)
        self._indexed = records
        if snapshot is not None and snapshot.applied <= records:
            self.snapshot = snapshot
        self._write_recovery_point(records)

    def _write_recovery_point(self, records: int) -> None:
        # self.snapshot always lies within the fsynced records (checkpoint, write_log): never past `records`.
        end = self._ends[records - 1] if records else 0
        _write_atomically(
            self.recovery_point_path, recovery_point_text(records, end, self._voter_offsets, self.snapshot)
        )
        self._named = records
        self._indexed = min(self._indexed, records)

    # ------------------------------------------------------------------ loading

    def _load_directory_id(self) -> str:
        if not self.directory_id_path.exists():
            _write_atomically(self.directory_id_path, new_directory_id() + "\n")
        directory_id = self.directory_id_path.read_text(encoding="utf-8").strip()
        if len(directory_id) != 32:
            raise StorageError(f"{self.directory_id_path}: corrupt at byte offset 0: not a directory id")
        return directory_id

    def _load_generation(self) -> int:
        if not self.generation_path.exists():
            return 0
        text = self.generation_path.read_text(encoding="utf-8").strip()
        if not text.isdigit():
            raise StorageError(f"{self.generation_path}: corrupt at byte offset 0: not a generation number")
        return int(text)

    def _load_election_state(self) -> ElectionState:
        if not self.quorum_path.exists():
            return ElectionState()
        value = _read_json(self.quorum_path)
        try:
            return ElectionState(int(value["epoch"]), value.get("voted_for"), value.get("leader"))
        except (KeyError, TypeError, ValueError):
            raise StorageError(f"{self.quorum_path}: corrupt at byte offset 0: not a quorum state") from None

    def _load_log(self) -> StoredRecords:
        """The log: what the recovery point vouches for left on disk, the rest
        read and checked record by record (cut back at damage)."""
        trusted, point, size = 0, None, 0
        if self.log_path.exists():
            size = self.log_path.stat().st_size
            point = read_recovery_point(self.path, size)
        if point is not None:
            trusted = trusted_records(point, size)
            self._ends, self._epochs = point.ends[:trusted], point.epochs[:trusted]
            self._voter_offsets = [o for o in point.voter_offsets if o < trusted]
        self._named = point.records if point is not None else 0
        self._indexed = trusted
        trusted_ends = self._ends[:]
        begin = self._ends[-1] if trusted else 0
        entries: list[Entry] = []
        if size > begin:
            with open(self.log_path, "rb") as log:
                log.seek(begin)
                data = log.read()
            position = 0
            while position < len(data):
                entry, following, problem = read_record(data, position)
                if entry is None:
                    kept = trusted + len(entries)
                    self._truncate_damaged(begin + position, len(data) - position, kept, problem or "unreadable")
                    break
                if is_voters_record(entry.data):
                    self._voter_offsets.append(len(self._ends))
                entries.append(entry)
                self._ends.append(begin + following)
                self._epochs.append(entry.epoch)
                position = following
        snapshot = point.snapshot if point is not None else None
        if snapshot is not None and snapshot.applied <= len(self._ends):
            if snapshot.applied == 0 or self._epochs[snapshot.applied - 1] == snapshot.applied_epoch:
                self.snapshot = snapshot
        return StoredRecords(self.log_path, trusted_ends, trusted, entries, self._epochs[:], list(self._voter_offsets))

    def _truncate_damaged(self, position: int, dropped: int, kept: int, problem: str) -> None:
        """Cut the log back to its last valid record, durably, and say so."""
        with open(self.log_path, "r+b") as log:
            log.truncate(position)
            os.fsync(log.fileno())
        self.truncated = {"offset": kept, "byte_offset": position, "bytes": dropped, "reason": problem}

    # ------------------------------------------------------------------ writing

    def write_election_state(self, state: ElectionState) -> None:
        record = {"epoch": state.epoch, "voted_for": state.voted_for, "leader": state.leader}
        _write_atomically(self.quorum_path, json.dumps(record) + "\n")
        self.election_state = state

    def write_log(self, log_from: int, entries: tuple[Entry, ...] | list[Entry], sync: bool = True) -> None:
        """Make the log its first `log_from` records followed by `entries`,
        durably (`sync`), or written now and fsynced by `sync()` later."""
        if log_from < len(self._ends):
            if self.snapshot is not None and log_from < self.snapshot.applied:
                self.snapshot = None
            if log_from < self._named:
                # Lowered first: a recovery point must never name records cut away.
                self._write_recovery_point(log_from)
            self._log.truncate(self._ends[log_from - 1] if log_from else 0)
            del self._ends[log_from:], self._epochs[log_from:]
            while self._voter_offsets and self._voter_offsets[-1] >= log_from:
                self._voter_offsets.pop()
            self._synced = min(self._synced, log_from)
        position = self._log.seek(0, os.SEEK_END)
        chunks = []
        for entry in entries:
            chunks.append(_encode(entry))
            position += len(chunks[-1])
            if is_voters_record(entry.data):
                self._voter_offsets.append(len(self._ends))
            self._ends.append(position)
            self._epochs.append(entry.epoch)
        with _naming(self.log_path):
            self._log.write(b"".join(chunks))
            self._log.flush()
        self.unsynced = True
        if sync:
            self.sync()
