"""A full disk and a damaged log on the correct reference node, end to end
(one seeded run on the local backend, whose random schedule gives each fault
its turn): a node whose disk fills stops with one line naming the write it
could not make, and starts again when there is room; a node started on a
damaged log tail cuts it back to its last valid record, says so, and catches
up; no acknowledged append is lost, and committed-data-loss names what each
cut-back log lost."""

from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd
import pytest

from tests.harness.test_cli import splitbrain

pytestmark = pytest.mark.slow


def test_a_full_disk_halts_a_node_and_a_damaged_log_is_cut_back_and_nothing_acknowledged_is_lost(tmp_path):
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "harness.cli",
            "run",
            "--nemesis",
            "disk-full,corrupt",
            "--nemesis-strategy",
            "random",
            "--time-limit",
            "24",
            "--seed",
            "1",
            "--results",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    [run] = [path for path in tmp_path.iterdir() if path.is_dir()]
    verdict = json.loads((run / "verdict.json").read_text())
    assert verdict["valid"] is True
    history = pd.read_parquet(run / "history.parquet")
    nemesis = history[(history["process"] == -1) & (history["type"] == "ok")]
    damaged = [json.loads(touched)[1] for touched in nemesis[nemesis["f"] == "corrupt"]["node"]]
    assert damaged and all(d["file"] == "log.bin" and d["mode"] in ("flip", "truncate") for d in damaged)
    events = pd.read_parquet(run / "events.parquet")
    assert (events["event"] == "halted").any()
    halted = "".join((run / "cluster" / node / "node.log").read_text() for node in ("n1", "n2", "n3"))
    assert "kraft-node: halted: No space left on device writing" in halted
    cut = events[events["event"] == "log-truncated"]
    assert len(cut) == len(damaged)
    named = verdict["checkers"]["committed-data-loss"]["stats"]["cut_back"]
    assert [c["node"] for c in named] == cut.sort_values("time_ns")["node"].tolist()
    assert all("cut it back to" in c["summary"] for c in named)


FULL_AT_THE_END = """
[campaign]
name = "full"
results = "{results}"
backend = "local"
workloads = ["append"]
nemeses = ["disk-full"]
time_limit_s = 6
seeds = [1]
schedule = [{{at_s = 2.0, f = "disk-full", args = {{target = "follower", seed = 1}}}}]

[targets.correct]
"""


def test_a_disk_still_full_when_load_ends_is_given_room_and_its_node_started_before_the_final_logs_are_read(
    tmp_path,
):
    config = tmp_path / "full.toml"
    config.write_text(FULL_AT_THE_END.format(results=tmp_path / "runs"))
    done = splitbrain("campaign", "--quiet", str(config))
    assert done.returncode == 0, done.stdout + done.stderr
    [run] = [path for path in (tmp_path / "runs" / "full").iterdir() if path.is_dir()]
    verdict = json.loads((run / "verdict.json").read_text())
    assert verdict["checkers"]["committed-data-loss"]["valid"] is True, verdict
    assert (pd.read_parquet(run / "events.parquet")["event"] == "halted").any()
    assert len(pd.read_parquet(run / "final.parquet")["node"].unique()) == 3
