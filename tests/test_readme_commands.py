"""README's command blocks, run as written from a copy of the checkout in a
temporary folder, so every path is relative to it as it is for a newcomer
(`runs/` by default): the main job, the Docker example, the campaign and
gate steps, and a cluster by hand. The tests of the rest pass absolute
temporary folders, which is how a relative results folder broke every Docker
run unseen. Where a block runs too long for CI, only its time limit (and a
campaign's seeds) is cut, never a path."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import docker
import pandas as pd
import pytest

from .pages import shown_commands

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
SHORT = ["--time-limit", "6"]


def readme_commands() -> list[str]:
    """Every command line of the ```sh blocks of README and the docs' pages."""
    return [line for _, line in shown_commands()]


def as_written(start: str, then: str = "") -> str:
    """The command README shows as `start` itself, else the first it shows
    that starts so (and holds `then`)."""
    commands = readme_commands()
    if start in commands and not then:
        return start
    return [c for c in commands if c.startswith(start + " ") and then in c][0]


def installed_from() -> str:
    """Where the shared virtualenv's splitbrain packages are installed from."""
    done = subprocess.run(
        [str(ROOT / ".venv" / "bin" / "python"), "-c", "import harness; print(harness.__file__)"],
        cwd="/",
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


@pytest.fixture(scope="module")
def clone(tmp_path_factory) -> Iterator[Path]:
    """The checkout's files (as they are in the work tree) in a new folder,
    beside the set-up the two commands made (.venv, shared, not copied).
    The checkout's own set-up is brought up to date first: the copy's
    `scripts/run.sh` finding it stale installed the shared virtualenv anew
    from the copy, so it imported a temporary folder's code, and its
    `splitbrain` command broke once that folder was gone."""
    subprocess.run([str(ROOT / "scripts" / "bootstrap.sh")], cwd=ROOT, capture_output=True, check=True)
    folder = tmp_path_factory.mktemp("newcomer") / "splitbrain"
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    for name in filter(None, files.split("\0")):
        if (ROOT / name).is_file():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, folder / name)
    (folder / ".venv").symlink_to(ROOT / ".venv")
    yield folder
    assert installed_from().startswith(str(ROOT / "harness")), "the copy's set-up took over the checkout's .venv"


def shell(
    clone: Path, command: str, *extra: str, timeout: int = 600, cwd: Path | None = None
) -> subprocess.CompletedProcess:
    line = " ".join([command, *extra])
    return subprocess.run(["bash", "-c", line], cwd=cwd or clone, capture_output=True, text=True, timeout=timeout)


def run_dirs(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if (p / "verdict.json").exists()) if folder.is_dir() else []


def test_the_main_job_and_the_docker_example_write_into_runs(clone):
    main = shell(clone, as_written("./scripts/run.sh"), "--quiet", *SHORT)
    assert main.returncode == 0, main.stdout + main.stderr[-2000:]
    [local] = run_dirs(clone / "runs")
    assert f"report: runs/{local.name}/report.html" in main.stdout
    example = re.search(r"`(\./scripts/run\.sh --backend docker --nodes 5)`", (ROOT / "README.md").read_text()).group(1)
    done = shell(clone, example, "--quiet", *SHORT)
    assert done.returncode == 0, done.stdout + done.stderr[-2000:]
    [on_docker] = [r for r in run_dirs(clone / "runs") if r != local]
    meta = json.loads((on_docker / "run.json").read_text())
    assert (
        meta["config"]["backend"] == "docker" and meta["config"]["nodes"] == 5 and meta["config"]["results"] == "runs"
    )
    assert (on_docker / "nodes" / "n5").is_dir()


def test_the_campaign_gate_and_archive_steps_run_as_written(clone):
    example = clone / "examples" / "campaign.toml"
    example.write_text(
        example.read_text().replace("time_limit_s = 16", "time_limit_s = 6").replace("seeds = [0, 1]", "seeds = [0]")
    )
    campaign = shell(clone, as_written(".venv/bin/splitbrain campaign"), "--quiet")
    assert campaign.returncode in (0, 1), campaign.stderr[-2000:]
    assert len(run_dirs(clone / "runs" / "campaigns" / "example")) == 6
    gate = shell(clone, as_written(".venv/bin/splitbrain gate"))
    assert gate.returncode in (0, 1) and "gate: " in gate.stdout, gate.stdout + gate.stderr
    assert (clone / "gate.xml").exists()
    packed = shell(clone, as_written(".venv/bin/splitbrain archive"))
    assert packed.returncode == 0, packed.stderr
    analyzed = shell(clone, as_written(".venv/bin/splitbrain analyze"), "--quiet")
    assert analyzed.returncode in (0, 1) and "6 runs re-checked on Spark" in analyzed.stdout, (
        analyzed.stdout + analyzed.stderr
    )
    assert (clone / "archive" / "analysis" / "failure_rate.json").exists()


def test_a_cluster_by_hand_is_brought_up_and_down_from_anywhere(clone, tmp_path):
    up = shell(clone, as_written(".venv/bin/splitbrain cluster up"), timeout=300)
    assert up.returncode == 0, up.stderr
    state = json.loads(up.stdout)
    assert (clone / "runs" / "cluster" / "cluster.json").exists()
    status = shell(clone, as_written(".venv/bin/splitbrain cluster status"))
    assert status.returncode == 0 and status.stdout.count("node=") == 3, status.stdout + status.stderr
    # From another folder, the relative state directory is not there: it says where it looked ...
    elsewhere = shell(clone, str(clone / ".venv" / "bin" / "splitbrain") + " cluster down", cwd=tmp_path)
    assert elsewhere.returncode == 0 and f"recorded in {tmp_path / 'runs' / 'cluster'}" in elsewhere.stdout, (
        elsewhere.stdout
    )
    labelled = {"label": f"splitbrain.run={state['run_id']}"}
    assert docker.from_env().containers.list(filters=labelled)
    # ... and the command `cluster up` printed removes the cluster from there.
    [undo] = re.findall(r"from any folder: (splitbrain cluster down --state-dir \S+)", up.stderr)
    down = shell(clone, undo.replace("splitbrain", str(clone / ".venv" / "bin" / "splitbrain"), 1), cwd=tmp_path)
    assert down.returncode == 0 and "removed" in down.stdout, down.stdout + down.stderr
    assert docker.from_env().containers.list(all=True, filters=labelled) == []
    assert shell(clone, as_written(".venv/bin/splitbrain cluster down")).stdout.startswith("cluster down: nothing")


def test_the_short_campaign_soak_and_mutation_run_as_written(clone):
    """README's short examples: a campaign cut by --max-runs alone, a soak of
    a minute, and a mutation score of two mutants; only the campaign's time
    limit is cut."""
    example = clone / "examples" / "campaign.toml"
    example.write_text(example.read_text().replace("time_limit_s = 16", "time_limit_s = 6"))
    short = shell(clone, as_written(".venv/bin/splitbrain campaign", "--max-runs"), "--quiet")
    assert short.returncode in (0, 1), short.stderr[-2000:]
    assert len(run_dirs(clone / "runs" / "short" / "example")) == 2, short.stdout
    soak = shell(clone, as_written(".venv/bin/splitbrain soak"), "--quiet", timeout=300)
    assert soak.returncode == 0, soak.stdout + soak.stderr[-2000:]
    [soaked] = [r for r in run_dirs(clone / "runs") if (r / "soak.html").exists()]
    assert json.loads((soaked / "verdict.json").read_text())["valid"] is True
    mutated = shell(clone, as_written(".venv/bin/splitbrain mutate"), "--quiet", timeout=1200)
    assert mutated.returncode == 0, mutated.stdout + mutated.stderr[-2000:]
    assert "mutate: score, caught by" in mutated.stdout and (clone / "runs" / "mutation" / "mutation.json").exists()


def test_a_release_of_the_server_runs_as_written(clone):
    """README's versions example: nats-server 2.15.1 from its pinned wheel.
    Its seed is drawn, and now and then the partition meets 2.15.1's own
    bug (docs/findings/nats-2.15.1-rejected-publish-stored.md: a publish
    answered "wrong last sequence", err_code 10071, is stored): exit 1 with
    that anomaly alone is the run finding it; anything else is not."""
    done = shell(clone, as_written(".venv/bin/splitbrain run", "--target nats@"), "--quiet", timeout=300)
    assert done.returncode in (0, 1), done.stdout + done.stderr[-2000:]
    [run_dir] = [r for r in run_dirs(clone / "runs") if json.loads((r / "run.json").read_text()).get("release")]
    assert json.loads((run_dir / "run.json").read_text())["versions"]["nats-server"] == "2.15.1"
    verdict = json.loads((run_dir / "verdict.json").read_text())
    assert verdict["valid"] is (done.returncode == 0), done.stdout
    if done.returncode == 1:
        history = pd.read_parquet(run_dir / "history.parquet")
        found = [(name, a) for name, result in verdict["checkers"].items() for a in result.get("anomalies", [])]
        for name, anomaly in found:
            assert (name, anomaly["kind"]) == ("committed-data-loss", "failed-append-committed"), done.stdout
            assert "err_code=10071" in history.loc[history["index"] == anomaly["index"], "error"].iat[0], anomaly
