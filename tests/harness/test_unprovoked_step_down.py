"""A leader that steps down with nothing wrong fails `progress`
(`unprovoked-step-down`) on a real reference-quorum cluster: with its
check-quorum window (`--fetch-timeout-ms`) shorter than the time between
its followers' fetches, each leader resigns within its first moments and
the cluster elects again and again, acknowledging a write now and then,
so `no-progress` alone passes it. The same cluster at its default window,
under the same seed and no fault, passes."""

from __future__ import annotations

import json

from harness.cli import main
from harness.cli.outcome import EXIT_INVALID, EXIT_VALID


def _run(tmp_path, *options: str) -> tuple[int, dict]:
    results = tmp_path / (options[-1] if options else "default")
    code = main(
        ["run", "--target", "kraft", "--nemesis", "none", "--time-limit", "5", "--seed", "1",
         "--results", str(results), "--quiet", *options]
    )  # fmt: skip
    [run_dir] = [path for path in results.iterdir() if path.is_dir()]
    return code, json.loads((run_dir / "verdict.json").read_text())["checkers"]["progress"]


def test_leaders_that_resign_with_no_fault_fail_progress(tmp_path, capsys):
    code, progress = _run(tmp_path, "--fetch-timeout-ms", "20")
    assert code == EXIT_INVALID, capsys.readouterr().err
    kinds = {anomaly["kind"] for anomaly in progress["anomalies"]}
    assert "unprovoked-step-down" in kinds and progress["stats"]["unprovoked_step_downs"] >= 3, progress
    code, progress = _run(tmp_path)
    assert code == EXIT_VALID and progress["stats"]["unprovoked_step_downs"] == 0, progress
