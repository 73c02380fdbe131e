"""The archive: runs packed with checksums and indexed; archiving again is a
no-op; every corrupt, missing or partial entry is named by `--verify`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from checkers.models import cas_register
from results import archive
from results.checking import check_run
from results.importer import import_file
from tests.harness.test_cli import splitbrain

KNOSSOS = Path(__file__).parents[1] / "data" / "outside" / "knossos-histories"


@pytest.fixture
def runs(tmp_path):
    folder = tmp_path / "imported"
    for name in ("good/cas-register-bug.edn", "good/memstress3-0.edn", "bad/cas-failure.edn"):
        import_file(KNOSSOS / name, "jepsen-edn", cas_register(0), folder)
    return folder


def test_runs_are_packed_indexed_and_archiving_again_changes_nothing(tmp_path, runs):
    store = tmp_path / "archive"
    added = archive.add(store, sorted(runs.iterdir()), check_run)
    assert added == ["imported--cas-failure", "imported--cas-register-bug", "imported--memstress3-0"]
    index = pd.read_parquet(store / archive.INDEX)
    assert index.set_index("run_id")["valid"].to_dict() == {
        "imported--cas-failure": "false",
        "imported--cas-register-bug": "true",
        "imported--memstress3-0": "true",
    }
    assert set(index["valid_linearizable"]) == {"true", "false"} and set(index["target"]) == {"import"}
    assert archive.add(store, sorted(runs.iterdir()), check_run) == []
    assert archive.verify(store) == []
    (runs / "memstress3-0" / "verdict.json").write_text("{}")
    with pytest.raises(archive.ArchiveError, match="memstress3-0: the archive holds other files"):
        archive.add(store, [runs / "memstress3-0"], check_run)


def test_verify_names_changed_missing_and_partial_entries(tmp_path, runs):
    store = tmp_path / "archive"
    archive.add(store, sorted(runs.iterdir()), check_run)
    stored = store / archive.RUNS
    with open(stored / "imported--cas-failure" / "history.parquet", "r+b") as f:
        f.seek(10)
        f.write(b"\0\0\0\0")
    (stored / "imported--memstress3-0" / "run.json").unlink()
    shutil.copytree(stored / "imported--cas-register-bug", stored / "half-copied")
    assert archive.verify(store) == [
        "imported--cas-failure: history.parquet: checksum differs from the manifest",
        "imported--memstress3-0: run.json: missing",
        "half-copied: partial entry: not in the manifest",
    ]
    done = splitbrain("archive", "--verify", str(store))
    assert done.returncode == 2 and done.stdout.count("\n") == 4, done.stdout
    assert done.stdout.splitlines()[-1] == f"archive {store}: 3 runs, 3 problems"


def test_a_crashed_run_is_recovered_and_checked_before_it_is_archived(tmp_path):
    from results.recording import HistoryRecorder

    crashed = tmp_path / "runs" / "crashed"
    crashed.mkdir(parents=True)
    recorder = HistoryRecorder(crashed)
    recorder.record(0, "invoke", "write", key="k", value=1)
    recorder.record(0, "ok", "write", key="k", value=1)
    recorder.file.flush()
    done = splitbrain("archive", "--to", str(tmp_path / "archive"), str(tmp_path / "runs"))
    assert done.returncode == 0, done.stdout + done.stderr
    stored = tmp_path / "archive" / archive.RUNS / "runs--crashed"
    assert (stored / "history.parquet").exists() and json.loads((stored / "verdict.json").read_text())["valid"] is True
