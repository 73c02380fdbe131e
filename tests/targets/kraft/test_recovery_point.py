"""A start reads only the log after its recovery point (and always its last
64 KiB); records before it are read from disk when asked. What the recovery
point names must always be on disk: it moves up only over fsynced records,
and down before the log is cut below it. Without one, or with one that does
not agree with the log, the whole log is checked as before."""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from targets.kraft.core import RaftConfig, RaftCore
from targets.kraft.log_index import ALWAYS_CHECKED_BYTES
from targets.kraft.messages import Entry
from targets.kraft.quorum_state import ElectionState
from targets.kraft.storage import DataDir, Snapshot, StorageError
from targets.kraft.voters import VoterSet

# Enough records (about 60 bytes each) that most lie before the always-checked tail.
MANY = 4 * ALWAYS_CHECKED_BYTES // 60


def _records(count: int, epoch: int = 1) -> list[Entry]:
    return [Entry(epoch, {"op": "append", "value": i}) for i in range(count)]


def _checkpointed(path, entries, snapshot=None) -> None:
    data = DataDir(path)
    data.write_log(0, entries)
    data.checkpoint(snapshot)
    data.close()


def test_records_before_the_recovery_point_are_read_when_asked_and_checked_then(tmp_path):
    entries = [Entry(0, VoterSet.of([("n1", "1" * 32)]).record()), *_records(MANY, epoch=2)]
    _checkpointed(tmp_path, entries)
    raw = bytearray((tmp_path / "log.bin").read_bytes())
    at = raw.index(b'"value":7}')
    raw[at + len('"value":')] = ord("8")  # the record's payload changed, its checksum not
    (tmp_path / "log.bin").write_bytes(bytes(raw))
    data = DataDir(tmp_path)  # the start did not read record 8
    assert data.truncated is None and len(data.entries) == len(entries)
    assert data.entries.epochs[-1] == 2 and data.entries.voter_offsets == [0]
    assert data.entries[-1] == entries[-1] and data.entries[9] == entries[9]
    with pytest.raises(StorageError, match=r"log\.bin: record 8 at byte offset \d+ changed on disk"):
        data.entries[0]  # read with the records after it, 8 among them
    data.close()


def test_a_damaged_tail_is_cut_back_on_start_however_recent_the_recovery_point(tmp_path):
    _checkpointed(tmp_path, _records(MANY))
    raw = bytearray((tmp_path / "log.bin").read_bytes())
    raw[-3] ^= 0xFF
    (tmp_path / "log.bin").write_bytes(bytes(raw))
    data = DataDir(tmp_path)
    assert data.truncated is not None and "checksum mismatch" in data.truncated["reason"]
    assert list(data.entries) == _records(MANY - 1)
    data.close()


def test_the_recovery_point_is_lowered_before_the_log_is_cut_below_it(tmp_path):
    """A life that truncates below the recovery point, appends records of
    another epoch and crashes before the next checkpoint: the next start
    reads the new records' epochs, not the index's old ones."""
    _checkpointed(tmp_path, _records(MANY))
    data = DataDir(tmp_path)
    data.write_log(10, _records(MANY, epoch=3))  # longer than before: the old point's bytes are all still there
    data.close()  # a crash: no checkpoint, no clean shutdown
    again = DataDir(tmp_path)
    assert list(again.entries) == _records(10) + _records(MANY, epoch=3)
    assert list(again.entries.epochs) == [1] * 10 + [3] * MANY
    again.close()


def test_a_recovery_point_that_disagrees_with_the_log_means_the_whole_log_is_checked(tmp_path):
    _checkpointed(tmp_path, _records(MANY))
    point = json.loads((tmp_path / "recovery-point.json").read_text())
    (tmp_path / "recovery-point.json").write_text(json.dumps({**point, "bytes": point["bytes"] + 1}))
    raw = bytearray((tmp_path / "log.bin").read_bytes())
    raw[raw.index(b'"value":7}') + len('"value":')] = ord("8")
    (tmp_path / "log.bin").write_bytes(bytes(raw))
    data = DataDir(tmp_path)  # checked in full: the changed record 7 is found, and the log cut there
    assert len(data.entries) == 7 and "checksum mismatch" in data.truncated["reason"]
    data.close()


def test_only_fsynced_records_are_named_and_a_snapshot_only_within_them(tmp_path):
    data = DataDir(tmp_path)
    data.write_log(0, _records(3))
    data.write_log(3, _records(2, epoch=2), sync=False)
    data.checkpoint(Snapshot(4, 2, {"k": 1}))  # applied past the fsynced records: not kept
    assert json.loads((tmp_path / "recovery-point.json").read_text())["records"] == 3
    assert data.snapshot is None
    data.checkpoint(Snapshot(2, 1, {"k": 0}))
    data.sync()
    data.close()
    again = DataDir(tmp_path)
    assert again.snapshot == Snapshot(2, 1, {"k": 0}) and len(again.entries) == 5
    again.write_log(1, [])  # the snapshot's records cut away: it goes with them
    assert again.snapshot is None
    again.close()
    assert DataDir(tmp_path).snapshot is None


@settings(max_examples=40, deadline=None)
@given(
    steps=st.lists(
        st.tuples(st.integers(0, 1), st.integers(0, 8), st.integers(1, 4), st.booleans(), st.booleans()),
        min_size=1,
        max_size=12,
    )
)
def test_a_start_reads_what_a_start_from_scratch_reads(tmp_path_factory, steps):
    """Writes, truncations, checkpoints and crashes in any order: a start
    with the recovery point sees the log a full check sees."""
    path = tmp_path_factory.mktemp("data")
    data = DataDir(path)
    expected: list[Entry] = []
    for epoch, cut, count, checkpoint, crash in steps:
        cut = min(cut, len(expected))
        new = [Entry(epoch + len(expected), {"v": i}) for i in range(count)]
        data.write_log(cut, new)
        expected = expected[:cut] + new
        if checkpoint:
            data.checkpoint(None)
        if crash:
            data.close()
            data = DataDir(path)
            assert list(data.entries) == expected and list(data.entries.epochs) == [e.epoch for e in expected]
    data.close()
    (path / "recovery-point.json").unlink(missing_ok=True)
    assert list(DataDir(path).entries) == expected


def test_a_core_started_from_a_snapshot_rebuilds_when_its_records_are_cut_away():
    entries = [Entry(1, {"op": "write", "key": "k", "value": v}) for v in range(4)]
    core = RaftCore(RaftConfig("n1"), ElectionState(1), entries, random.Random(1), 0, (4, {"k": 3}))
    assert core.applied == 4 and core.machine.read_now("k") == {"value": 3}
    core._truncate(2)
    assert core.applied == 0 and core.machine.read_now("k") == {"value": None}


@settings(max_examples=60, deadline=None)
@given(
    stored=st.integers(0, 6),
    ops=st.lists(
        st.tuples(st.sampled_from(["append", "cut", "get", "slice"]), st.integers(-8, 12), st.integers(-8, 12)),
        max_size=20,
    ),
)
def test_the_stored_log_reads_appends_and_cuts_as_a_list_does(tmp_path_factory, stored, ops):
    """The records left on disk at start and those appended after, read,
    sliced and cut back as the core does with a list."""
    path = tmp_path_factory.mktemp("data")
    _checkpointed(path, _records(stored))
    (path / "log.bin").write_bytes((path / "log.bin").read_bytes() + b"\0" * ALWAYS_CHECKED_BYTES)
    data = DataDir(path)  # the zeros: a torn tail cut back, the records before it trusted
    assert data.entries._count == stored
    model = _records(stored)
    for op, a, b in ops:
        if op == "append":
            entry = Entry(2, {"v": a})
            data.entries.append(entry)
            model.append(entry)
        elif op == "cut":
            del data.entries[max(0, a) :]
            del model[max(0, a) :]
        elif op == "get" and -len(model) <= a < len(model):
            assert data.entries[a] == model[a]
        elif op == "slice":
            assert data.entries[a:b] == model[a:b]
        assert len(data.entries) == len(model)
    assert list(data.entries) == model
    data.close()
