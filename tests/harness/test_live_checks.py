"""Judging a real run while it goes (harness/live.py), end to end on the
local backend: with `--stop-on-violation`, a planted bug
(ack-before-commit in the history; prevote-always in a node's own log,
read as it is written) is found live, the load ends there, before its
time limit, the faults are healed, and the batch verdict holds the same
violation; with `--check-live` on the correct node, the live verdict is
valid, as the batch one is, checker by checker, and names the checker
whose final-copy cases only the batch verdict judges."""

from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd
import pytest

pytestmark = pytest.mark.slow

TIME_LIMIT_S = 40


def run(tmp_path, *args: str) -> tuple[subprocess.CompletedProcess, dict, dict, dict]:
    done = subprocess.run(
        [sys.executable, "-m", "harness.cli", "run", "--quiet", "--results", str(tmp_path), *args],
        capture_output=True,
        text=True,
        timeout=300,
    )
    [run_dir] = [path for path in tmp_path.iterdir() if path.is_dir()]
    read = [json.loads((run_dir / name).read_text()) for name in ("live.json", "verdict.json", "run.json")]
    return done, *read


@pytest.mark.parametrize(
    "bug, checker",
    # Two replies at one offset; a pre-vote granted while following, in a node's own log (read as it is written).
    [("ack-before-commit", "linearizable"), ("prevote-always", "election-safety")],
)
def test_a_violation_found_live_ends_the_load_and_the_batch_verdict_holds_it(tmp_path, bug, checker):
    done, live, verdict, meta = run(
        tmp_path, "--bug", bug, "--stop-on-violation", "--seed", "1", "--time-limit", str(TIME_LIMIT_S)
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert live["valid"] is False and checker in live["found"], live
    stopped = meta["stopped_load_at_s"]
    first = min(found["found_at_s"] for found in live["found"].values())
    # The load ends at the first finding (a look or two later), whenever the faults bring the bug about:
    # under CI's load the guided nemesis once made prevote-always's moment 26 s in, not in the first half.
    assert stopped is not None and stopped - first < 2 and stopped - meta["load_start_s"] < TIME_LIMIT_S - 5, meta
    for name, found in live["found"].items():
        assert found["found_at_s"] <= stopped + 0.5
        assert verdict["checkers"][name]["valid"] is False, (name, verdict["checkers"][name])
    assert "splitbrain: live: " in done.stderr and "load stopped at" in done.stderr
    [run_dir] = [path for path in tmp_path.iterdir() if path.is_dir()]
    settled = pd.read_parquet(run_dir / "final.parquet")  # healed, settled, every node's log read
    assert sorted(settled["node"].unique()) == ["n1", "n2", "n3"]


def test_the_live_verdict_of_a_correct_run_is_the_batch_ones(tmp_path):
    done, live, verdict, meta = run(tmp_path, "--check-live", "--seed", "2", "--time-limit", "10")
    assert done.returncode == 0, done.stdout + done.stderr
    assert live["valid"] is True and not live["found"] and live["looks"] >= 5, live
    judged = {name: valid for name, valid in live["last"].items() if name in verdict["checkers"]}
    assert judged and all(verdict["checkers"][name]["valid"] == valid for name, valid in judged.items())
    assert meta["stopped_load_at_s"] is None
    # What only the final copies show is not judged live, and the line says so: `true` is not read as final.
    assert "committed-data-loss" in live["after_healing"], live
    said = f"final copies show comes with the batch verdict, once healed: {', '.join(live['after_healing'])}"
    assert said in done.stderr
    # Said within moments of the end of load (goal 1 s at 5,000 ops/s for 10 minutes: benchmarks/live_verdict.py).
    assert 0 <= live["verdict_after_load_s"] < 5 and "s after load ended" in done.stderr, live
