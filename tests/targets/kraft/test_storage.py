"""The node's data directory: durable round trips, truncation, and clear
errors (file and byte offset) for every kind of corruption."""

from __future__ import annotations

import pytest

from targets.kraft.messages import Entry
from targets.kraft.quorum_state import ElectionState
from targets.kraft.storage import DataDir, StorageError


def reopen(path):
    data = DataDir(path)
    data.close()
    return data


def test_state_log_and_generation_survive_a_restart(tmp_path):
    data = DataDir(tmp_path)
    assert data.generation == 1 and data.entries == [] and data.election_state == ElectionState()
    data.write_election_state(ElectionState(3, "n2", None))
    data.write_log(0, [Entry(1, {"op": "leader"}), Entry(3, {"op": "append", "value": "é"})])
    data.close()
    again = reopen(tmp_path)
    assert again.generation == 2
    assert again.election_state == ElectionState(3, "n2", None)
    assert again.entries == [Entry(1, {"op": "leader"}), Entry(3, {"op": "append", "value": "é"})]
    assert again.directory_id == data.directory_id


def test_truncation_then_append_rewrites_the_tail(tmp_path):
    data = DataDir(tmp_path)
    data.write_log(0, [Entry(1, {"i": i}) for i in range(5)])
    data.write_log(2, [Entry(2, {"i": "new"})])
    data.write_log(3, [Entry(2, {"i": "next"})])
    data.write_log(1, [])
    data.write_log(1, [Entry(4, {"i": "last"})])
    data.close()
    assert reopen(tmp_path).entries == [Entry(1, {"i": 0}), Entry(4, {"i": "last"})]


def test_a_wiped_directory_gets_a_new_directory_id(tmp_path):
    first = reopen(tmp_path / "a")
    second = reopen(tmp_path / "b")
    assert first.directory_id != second.directory_id


def _log_with_two_records(tmp_path):
    data = DataDir(tmp_path)
    data.write_log(0, [Entry(1, {"value": 1}), Entry(1, {"value": 2})])
    data.close()
    return tmp_path / "log.bin"


def _cut_back(tmp_path, damaged: bytes, half: int, what: str) -> None:
    """The damaged second record is cut off, durably, and the cut is reported."""
    (tmp_path / "log.bin").write_bytes(damaged)
    data = DataDir(tmp_path)
    assert data.entries == [Entry(1, {"value": 1})]
    assert data.truncated == {
        "offset": 1,
        "byte_offset": half,
        "bytes": len(damaged) - half,
        "reason": data.truncated["reason"],
    }
    assert what in data.truncated["reason"]
    assert data.must_catch_up
    data.write_log(1, [Entry(2, {"value": 3})])  # appends after the last valid record
    data.close()
    again = DataDir(tmp_path)
    assert again.entries == [Entry(1, {"value": 1}), Entry(2, {"value": 3})] and again.truncated is None
    # Restarted before it caught up: the log reads as valid, but still may lack records it reported.
    assert again.must_catch_up
    again.caught_up()
    again.close()
    assert not DataDir(tmp_path).must_catch_up


def test_a_flipped_byte_cuts_the_log_back_to_the_record_before(tmp_path):
    raw = bytearray(_log_with_two_records(tmp_path).read_bytes())
    raw[-3] ^= 0xFF
    _cut_back(tmp_path, bytes(raw), len(raw) // 2, "checksum mismatch")


@pytest.mark.parametrize("keep, what", [(-3, "torn record"), (3, "torn header")])
def test_a_torn_tail_is_cut_back_and_reported(tmp_path, keep, what):
    """`keep`: bytes of the second (equal-sized) record left, or taken off its end if negative."""
    raw = _log_with_two_records(tmp_path).read_bytes()
    half = len(raw) // 2
    _cut_back(tmp_path, raw[: half + keep] if keep > 0 else raw[:keep], half, what)


def test_a_corrupt_quorum_state_is_reported(tmp_path):
    reopen(tmp_path)
    (tmp_path / "quorum-state.json").write_text('{"epoch": 3, "vot')
    with pytest.raises(StorageError, match=r"quorum-state\.json: corrupt JSON at byte offset \d+"):
        DataDir(tmp_path)


def test_a_corrupt_generation_is_reported(tmp_path):
    reopen(tmp_path)
    (tmp_path / "generation").write_text("x\n")
    with pytest.raises(StorageError, match=r"generation: corrupt at byte offset 0"):
        DataDir(tmp_path)


def test_format_bootstraps_the_voter_set_once(tmp_path, capsys):
    from targets.kraft.format import main as format_main
    from targets.kraft.voters import VoterSet

    ids = {"n1": "1" * 32, "n2": "2" * 32}
    voters = ",".join(f"{node}@{directory}" for node, directory in ids.items())
    assert (
        format_main(
            ["--id=n1", f"--data-dir={tmp_path / 'n1'}", f"--directory-id={ids['n1']}", f"--initial-voters={voters}"]
        )
        == 0
    )
    assert capsys.readouterr().out.strip() == ids["n1"]
    data = reopen(tmp_path / "n1")
    assert data.directory_id == ids["n1"] and data.generation == 1
    assert data.entries == [Entry(0, VoterSet.of(ids.items()).record())]
    assert format_main(["--id=n1", f"--data-dir={tmp_path / 'n1'}"]) == 2
    assert "already formatted" in capsys.readouterr().err


def test_standalone_and_observer_formats(tmp_path, capsys):
    from targets.kraft.format import main as format_main

    assert format_main(["--id=n1", f"--data-dir={tmp_path / 'alone'}", "--standalone"]) == 0
    alone = reopen(tmp_path / "alone")
    assert alone.entries[0].data["voters"] == [["n1", alone.directory_id]]
    assert format_main(["--id=n2", f"--data-dir={tmp_path / 'observer'}"]) == 0
    assert reopen(tmp_path / "observer").entries == []
    with pytest.raises(SystemExit):
        format_main(["--id=n1", f"--data-dir={tmp_path / 'bad'}", "--initial-voters=n1@short"])
    assert "ID@DIRECTORY_ID" in capsys.readouterr().err


def test_a_start_after_a_life_without_a_clean_shutdown_is_unclean(tmp_path):
    first = DataDir(tmp_path)
    assert not first.unclean  # no life before it
    first.write_log(0, [Entry(1, {"op": "append", "value": 1})], sync=False)
    assert first.unsynced
    first.sync()
    assert not first.unsynced
    first.close()  # as a crash leaves it: no mark
    second = DataDir(tmp_path)
    assert second.unclean and second.generation == 2
    second.close(clean=True)
    third = DataDir(tmp_path)
    assert not third.unclean and len(third.entries) == 1
    third.close()
