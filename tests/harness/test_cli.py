"""The `splitbrain` command as a user runs it: verdict on stdout, exit code by verdict."""

from __future__ import annotations

import json
import subprocess
import sys


def splitbrain(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "harness.cli", *args], capture_output=True, text=True, timeout=300
    )


def test_simulate_passes_the_correct_node():
    result = splitbrain("simulate", "--schedules", "5", "--quiet")
    assert result.returncode == 0, result.stderr
    verdict = json.loads(result.stdout)
    assert verdict["valid"] is True and verdict["checkers"]["simulation-invariants"]["stats"]["schedules"] == 5


def test_simulate_fails_a_planted_bug_and_names_the_seed():
    result = splitbrain("simulate", "--schedules", "20", "--quiet", "--bug", "stale-read")
    assert result.returncode == 1
    anomaly = json.loads(result.stdout)["checkers"]["simulation-invariants"]["anomalies"][0]
    assert "stale read" in anomaly["violation"] and isinstance(anomaly["seed"], int)


def test_bad_options_are_one_line_errors():
    result = splitbrain("simulate", "--bug", "no-such-bug")
    assert result.returncode == 2 and "no-such-bug" in result.stderr


def test_node_reports_an_unusable_data_dir(tmp_path):
    (tmp_path / "generation").write_text("garbage")
    result = splitbrain(
        "node", "--id", "n1", "--data-dir", str(tmp_path), "--raft-listen", "127.0.0.1:0", "--client-listen", "127.0.0.1:0"
    )
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0 and "generation: corrupt" in result.stderr


def test_check_reads_a_crashed_runs_jsonl_and_finds_a_stale_read(tmp_path):
    from results.history import HistoryRecorder

    recorder = HistoryRecorder(tmp_path)
    for process, f, value, result in ((0, "write", 1, 1), (0, "write", 2, 2), (1, "read", None, 1)):
        recorder.record(process, "invoke", f, key="k", value=value)
        recorder.record(process, "ok", f, key="k", value=result)
    recorder.file.flush()  # no close, no parquet: the harness "crashed"
    result = splitbrain("check", str(tmp_path))
    assert result.returncode == 1, result.stdout + result.stderr
    assert "linearizable: False" in result.stdout
    assert json.loads((tmp_path / "verdict.json").read_text())["valid"] is False


def test_check_names_a_corrupt_history_line(tmp_path):
    (tmp_path / "history.jsonl").write_text('{"index": 0}\n{oops\n{"index": 2}\n')
    result = splitbrain("check", str(tmp_path))
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith(f"splitbrain: {tmp_path / 'history.jsonl'}: line 2: ")
