"""A coordinated power loss end to end (the correct reference node, local
backend, every write fsynced before it counts, the default): every node's
power lost at one instant, each one's unfsynced writes dropped, all started
again, and nothing acknowledged lost; the history names every node the fault
hit and coverage counts it in its own cell. (With followers that fsync only
every 200 ms, `--flush-interval-ms 200`, the same fault can take what a
majority acknowledged from memory: a clean-clone CI run lost the appends of
the last moment before it, which committed-data-loss named.)"""

from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd
import pytest

pytestmark = pytest.mark.slow
CAMPAIGN = """
[campaign]
name = "power"
time_limit_s = 10
nemeses = ["lose-unfsynced"]
nemesis_strategy = "random"
seeds = [1]

[targets.all]
schedule = [{at_s = 4.0, f = "lose-unfsynced", args = {target = "all", seed = 5}}, {at_s = 10.0, f = "heal-all", args = {}}]
"""


def test_every_nodes_power_lost_at_once_loses_nothing_acknowledged_on_the_correct_node(tmp_path):
    (tmp_path / "power.toml").write_text(CAMPAIGN)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "harness.cli",
            "campaign",
            "--quiet",
            "--results",
            str(tmp_path / "runs"),
            str(tmp_path / "power.toml"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    [run] = (tmp_path / "runs" / "power").glob("all-*")
    history = pd.read_parquet(run / "history.parquet")
    [hit] = history[(history["f"] == "lose-unfsynced") & (history["type"] == "ok")]["node"]
    assert json.loads(hit) == ["n1", "n2", "n3"]
    events = pd.read_parquet(run / "events.parquet")
    assert events.groupby("node")["generation"].max().to_dict() == {"n1": 2, "n2": 2, "n3": 2}
    verdict = json.loads((run / "verdict.json").read_text())
    assert verdict["valid"] is True and verdict["checkers"]["committed-data-loss"]["stats"]["acknowledged"] > 0
    assert [(c["fault"], c["role"]) for c in verdict["coverage"]["cells"]] == [("lose-unfsynced", "all")]
