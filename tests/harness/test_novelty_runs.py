"""The novelty search on a real cluster, as a user runs it: a campaign of
two short runs of the reference quorum (local backend) under
`nemesis_strategy = "novelty"`. Each run decides its faults as it goes and
writes them down (run.json's schedule), keeps what it learned
(novelty.json), and its coverage names the abstract states it reached; the
second run starts from what the first learned, the campaign's memory; and
a later campaign (`learn_from`) starts from what the archived one learned."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from harness.campaign import load

pytestmark = pytest.mark.slow

CAMPAIGN = """
[campaign]
name = "novelty"
results = "{results}"
backend = "local"
time_limit_s = 10
interval_s = 2
nemesis_strategy = "novelty"
workloads = ["append"]
seeds = [1, 2]

[targets.correct]
"""


def campaign(config) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [sys.executable, "-m", "harness.cli", "campaign", "--quiet", str(config)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def test_a_novelty_campaign_decides_as_it_goes_and_learns_across_its_runs(tmp_path):
    config = tmp_path / "novelty.toml"
    config.write_text(CAMPAIGN.format(results=tmp_path / "runs"))
    campaign(config)
    folder, planned = load(config)
    learned = []
    for plan in planned:
        run_dir = folder / plan.run_id
        meta = json.loads((run_dir / "run.json").read_text())
        verdict = json.loads((run_dir / "verdict.json").read_text())
        assert meta["config"]["nemesis_strategy"] == "novelty" and verdict["valid"] is True
        assert any(op["f"] != "heal-all" for op in meta["schedule"])
        assert len(verdict["coverage"]["states"]) >= 3 and verdict["coverage"]["transitions"]
        learned.append(json.loads((run_dir / "novelty.json").read_text()))
    first, second = learned
    assert sum(second["visits"].values()) > sum(first["visits"].values())
    assert set(first["moves"]) < set(second["moves"])
    assert json.loads((folder / "novelty.json").read_text()) == second
    # Across campaigns, through the archive: the later campaign starts where this one ended.
    archived = subprocess.run(
        [sys.executable, "-m", "harness.cli", "archive", "--to", str(tmp_path / "archive"), str(folder)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert archived.returncode == 0, archived.stdout + archived.stderr
    later = tmp_path / "later.toml"
    later.write_text(
        CAMPAIGN.format(results=tmp_path / "runs")
        .replace('name = "novelty"', f'name = "later"\nlearn_from = ["{tmp_path / "archive"}"]')
        .replace("seeds = [1, 2]", "seeds = [3]")
    )
    done = campaign(later)
    assert "campaign: learning from 2 novelty.json files" in done.stderr + done.stdout
    later_folder, [plan] = load(later)
    grown = json.loads((later_folder / plan.run_id / "novelty.json").read_text())
    assert all(grown["visits"].get(state, 0) >= visits for state, visits in second["visits"].items())
    assert set(second["moves"]) <= set(grown["moves"])
