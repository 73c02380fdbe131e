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
