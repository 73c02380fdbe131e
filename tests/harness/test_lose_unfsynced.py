"""The lose-unfsynced fault end to end, one seed of `examples/lose-unfsynced.toml`:
the planted bug ack-before-fsync loses acknowledged appends when the
leader's crash is a power loss, not when it is a plain kill and restart, and
the correct node loses nothing under the same power loss."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "lose-unfsynced.toml"


def test_a_power_loss_catches_ack_before_fsync_and_a_kill_does_not(tmp_path):
    config = tmp_path / "campaign.toml"
    config.write_text(EXAMPLE.read_text().replace("seeds = [1, 2, 3]", "seeds = [1]"))
    done = subprocess.run(
        [sys.executable, "-m", "harness.cli", "campaign", "--quiet", "--results", str(tmp_path / "runs"), str(config)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    verdicts = {}
    for path in (tmp_path / "runs" / "lose-unfsynced").glob("*/verdict.json"):
        option_set = json.loads((path.parent / "run.json").read_text())["config"]["option_set"]
        verdicts[option_set] = json.loads(path.read_text())["checkers"]
    assert verdicts["power-loss"]["committed-data-loss"]["valid"] is False
    assert verdicts["power-loss"]["committed-data-loss"]["anomalies"][0]["kind"] == "lost-acknowledged-append"
    assert all(result["valid"] is True for result in verdicts["plain-kill"].values())
    assert all(result["valid"] is True for result in verdicts["correct"].values())
