"""Dynamic voters on Docker, as a user runs them: the two named campaigns of
`examples/`, with real containers, link proxies and disk loss.

- `membership.toml`: each planted membership bug is caught by the
  `membership` checker in at least 2 of its 3 seeded runs (each at most
  60 s), and the correct node is valid under the same faults.
- `kip1186.toml`: auto-joining replicas cost a resignation and an election
  when they ask with AckWhenCommitted=true, and nothing when answered once
  written; for a standalone start and for a set of 3 growing to 4 with one
  voter down.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import docker
import pandas as pd
import pytest

from harness.campaign import load

pytestmark = pytest.mark.slow

EXAMPLES = Path(__file__).parents[2] / "examples"
BUGS = ("multi-voter-change", "ignore-directory-id", "ack-voter-early")


def run_campaign(name: str, workspace: Path, *spark: str) -> dict[str, list[Path]]:
    """Run examples/NAME.toml with its results under `workspace`: {target: [run directories]}.
    `spark`: campaign options that run its runs as Spark tasks, several at once."""
    config = workspace / f"{name}.toml"
    text = (EXAMPLES / f"{name}.toml").read_text()
    config.write_text(text.replace('results = "runs/campaigns"', f'results = "{workspace}"'))
    done = subprocess.run(
        [sys.executable, "-m", "harness.cli", "campaign", "--quiet", *spark, str(config)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode in (0, 1), done.stdout + done.stderr
    folder, planned = load(config)
    runs: dict[str, list[Path]] = {}
    for plan in planned:
        runs.setdefault(plan.target, []).append(folder / plan.run_id)
    # Nothing of these runs is left (the machine is shared: others' containers are not ours to count).
    ours = {plan.run_id for plan in planned}
    left = docker.from_env().containers.list(all=True, filters={"label": "splitbrain.run"})
    assert [c.name for c in left if c.labels.get("splitbrain.run") in ours] == []
    return runs


def checkers_of(run_dir: Path) -> dict:
    return json.loads((run_dir / "verdict.json").read_text())["checkers"]


def duration_s(run_dir: Path) -> float:
    meta = json.loads((run_dir / "run.json").read_text())
    started = time.mktime(time.strptime(meta["start_time"], "%Y-%m-%dT%H:%M:%S%z"))
    return (run_dir / "verdict.json").stat().st_mtime - started


@pytest.fixture(scope="module")
def membership_runs(tmp_path_factory):
    # Three at a time (each run's containers mostly wait on their clocks): 81 s on a quiet machine, 194 s one at a time in CI.
    return run_campaign(
        "membership", tmp_path_factory.mktemp("membership"), "--spark", "local[3]", "--runs-per-host", "3"
    )


@pytest.mark.parametrize("bug", BUGS)
def test_each_membership_bug_is_caught_in_two_of_three_runs(membership_runs, bug):
    runs = membership_runs[bug]
    assert len(runs) == 3
    caught = [r for r in runs if checkers_of(r)["membership"]["valid"] is False]
    assert len(caught) >= 2, f"{bug} caught in {len(caught)} of 3 runs"
    assert all(duration_s(r) <= 60 for r in runs), [duration_s(r) for r in runs]


def test_the_correct_node_is_valid_under_the_same_faults(membership_runs):
    for run_dir in membership_runs["correct"]:
        verdict = checkers_of(run_dir)
        assert all(result["valid"] is True for result in verdict.values()), (run_dir, verdict)
        assert verdict["membership"]["stats"]["operator_changes"] >= 2


@pytest.fixture(scope="module")
def kip1186_runs(tmp_path_factory):
    # One at a time: three at once beside CI's other workers cost quiet joins a resignation (2 of 3 runs once).
    return run_campaign("kip1186", tmp_path_factory.mktemp("kip1186"))


@pytest.mark.parametrize("scenario", ["standalone", "grow-minority-down"])
def test_ack_when_committed_costs_a_resignation_and_an_election(kip1186_runs, scenario):
    def figures(target):
        return [checkers_of(r)["availability"]["stats"] for r in kip1186_runs[target]]

    quiet, costly = figures(scenario), figures(f"{scenario}-ack-always")
    assert all(f["resignations"] == 0 and f["leader_elections"] == 1 for f in quiet), quiet
    assert all(f["resignations"] >= 1 and f["leader_elections"] >= 2 for f in costly), costly
    for run_dir in kip1186_runs[scenario] + kip1186_runs[f"{scenario}-ack-always"]:
        assert checkers_of(run_dir)["membership"]["valid"] is True
        final = json.loads((run_dir / "run.json").read_text())["config"]["nodes"]
        statuses = _voters_at_end(run_dir)
        assert len(statuses) == final, (run_dir, statuses)


def _voters_at_end(run_dir: Path) -> list:
    """The voter set the nodes last reported: every node joined in the end."""
    events = pd.read_parquet(run_dir / "events.parquet")
    polls = events[(events["event"] == "status") & events["voters"].notna()].sort_values("time_ns")
    return json.loads(polls["voters"].iloc[-1])
