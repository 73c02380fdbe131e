"""Campaigns and simulations as Spark tasks (harness/spark_campaign.py,
harness/spark_simulation.py): a small campaign on `local[2]` interrupted,
healed, resumed and then skipped; a standalone cluster's executor killed
mid-run, its run run again elsewhere and nothing of it left running; the
simulation's verdict on Spark equal to the serial one; host slots, memory
merging, and bad settings refused in one line."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from harness.campaign import CampaignError, spark_runner
from harness.processes import alive, command_lines, descendants, names
from harness.spark_campaign import RUN_NAME, host_slot
from harness.spark_simulation import merged
from harness.spark_standalone import StandaloneSpark
from nemesis.novelty import Memory
from tests.harness.test_cli import splitbrain

CAMPAIGN = """
[campaign]
name = "sparked"
results = "{results}"
backend = "local"
time_limit_s = {seconds}
interval_s = 1
workloads = ["append"]
nemeses = ["kill,pause"]
{extra}
[targets.guided]
seeds = [1, 2]
[targets.novel]
nemesis_strategy = "novelty"
seeds = [3]
"""
RUN_FILES = {"run.json", "verdict.json", "report.html", "history.parquet", "events.parquet", "final.parquet"}


def runs_in(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.is_dir() and p.name.startswith(("guided-", "novel-")))


def wait_for_runs(root: int, count: int, timeout_s: float = 120) -> None:
    """Until `count` runs are under way below `root` (their processes, named RUN_NAME)."""
    deadline = time.monotonic() + timeout_s
    while names(descendants(root)).count(RUN_NAME) < count:
        assert time.monotonic() < deadline, "the runs did not start"
        time.sleep(0.5)


@pytest.mark.slow
def test_a_campaign_on_local_spark_heals_on_sigint_resumes_and_skips_what_is_done(tmp_path):
    config = tmp_path / "c.toml"
    config.write_text(CAMPAIGN.format(results=tmp_path / "runs", seconds=30, extra='spark = "local[2]"'))
    folder = tmp_path / "runs" / "sparked"
    command = [sys.executable, "-m", "harness.cli", "campaign", "--quiet", str(config)]
    campaign = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for_runs(campaign.pid, 2)
    time.sleep(3)  # the nodes are up and the load is on
    tree = descendants(campaign.pid)
    campaign.send_signal(signal.SIGINT)
    out, err = campaign.communicate(timeout=120)
    assert campaign.returncode == 2 and "splitbrain: interrupted" in err, out + err
    deadline = time.monotonic() + 30
    while alive(tree) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not alive(tree), command_lines(alive(tree))
    assert runs_in(folder) == []  # nothing half done lands
    extra = 'spark = "local[2]"\nruns_per_host = 3'
    config.write_text(CAMPAIGN.format(results=tmp_path / "runs", seconds=4, extra=extra))
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "spark: local[2]: 2 cores: up to 2 runs at once" in done.stdout
    assert "spark: the cluster has 2 cores, fewer than runs_per_host (3)" in done.stdout
    expected = ["guided-append-kill+pause-s1-r0", "guided-append-kill+pause-s2-r0", "novel-append-kill+pause-s3-r0"]
    assert runs_in(folder) == expected
    assert len(re.findall(r"^true +\S+/sparked/", done.stdout, re.MULTILINE)) == 3, done.stdout
    for run in expected:
        assert RUN_FILES <= {p.name for p in (folder / run).iterdir()}
        assert json.loads((folder / run / "verdict.json").read_text())["valid"] is True
    assert Memory.read(folder / "novelty.json").visits  # what the novelty run learned came back
    assert not [p for p in folder.iterdir() if p.name.startswith(".landing-")]
    stamps = {run: (folder / run / "verdict.json").stat().st_mtime_ns for run in expected}
    again = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0 and "campaign: 3 runs" in again.stdout, again.stdout + again.stderr
    assert stamps == {run: (folder / run / "verdict.json").stat().st_mtime_ns for run in expected}


@pytest.mark.slow
def test_a_killed_executor_s_run_is_run_again_elsewhere_and_nothing_of_it_is_left(tmp_path):
    config = tmp_path / "c.toml"
    config.write_text(CAMPAIGN.format(results=tmp_path / "runs", seconds=8, extra="").split("[targets.novel]")[0])
    with StandaloneSpark(tmp_path / "spark", workers=2, cores=1) as cluster:
        command = [sys.executable, "-m", "harness.cli", "campaign", "--quiet", "--spark", cluster.url, str(config)]
        campaign = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            wait_for_runs(cluster.workers[0].pid, 1)
            time.sleep(3)
            killed = cluster.kill_worker(0)
            assert RUN_NAME in names(killed)
            deadline = time.monotonic() + 30
            while alive(killed) and time.monotonic() < deadline:
                time.sleep(0.5)
            assert not alive(killed), command_lines(alive(killed))
            out, err = campaign.communicate(timeout=300)
        finally:
            campaign.kill()
    assert campaign.returncode == 0, out + err
    folder = tmp_path / "runs" / "sparked"
    assert runs_in(folder) == ["guided-append-kill+pause-s1-r0", "guided-append-kill+pause-s2-r0"]
    assert len(re.findall(r"^true ", out, re.MULTILINE)) == 2, out
    assert not [p for p in folder.iterdir() if p.name.startswith((".landing-", "interrupted"))]


def test_the_simulation_on_spark_gives_the_serial_verdict():
    args = ["simulate", "--quiet", "--schedules", "60", "--bug", "prevote-always", "--keep-going"]
    serial, spark = splitbrain(*args), splitbrain(*args, "--spark", "local[2]")
    assert serial.returncode == spark.returncode == 1, spark.stdout + spark.stderr
    here, there = (json.loads(done.stdout)["checkers"]["simulation-invariants"] for done in (serial, spark))
    assert there["anomalies"] == here["anomalies"] and here["anomalies"]
    assert there["stats"]["schedules"] == 60 and there["stats"]["tasks"] == 2
    assert serial.stderr.splitlines()[-1] == spark.stderr.splitlines()[-1]  # the same summary line


def test_without_keep_going_the_first_violation_by_seed_ends_the_simulation():
    def share(first: int, count: int, bad: list[int]) -> dict:
        anomalies = [{"seed": seed} for seed in bad]
        stats = {"schedules": count if not bad else bad[0] - first + 1, "digest": str(first), "search": "random"}
        return {"checkers": {"simulation-invariants": {"anomalies": anomalies, "stats": stats}}}

    shares = [share(0, 50, []), share(50, 50, [61]), share(100, 20, [101])]
    verdict = merged(shares, keep_going=False, tasks=3)
    result = verdict["checkers"]["simulation-invariants"]
    assert verdict["valid"] is False and result["anomalies"] == [{"seed": 61}]
    assert result["stats"]["schedules"] == 62 and result["stats"]["tasks"] == 3
    assert [a["seed"] for a in merged(shares, True, 3)["checkers"]["simulation-invariants"]["anomalies"]] == [61, 101]
    assert merged(shares[:1], False, 1)["valid"] is True


def test_a_host_slot_is_held_until_its_run_ends():
    name = f"splitbrain-test-{os.getpid()}"
    order = []
    with host_slot(name, 1):
        waiter = threading.Thread(target=lambda: order.append(slot_taken(name)))
        waiter.start()
        time.sleep(1.5)
        order.append("first released")
    waiter.join(10)
    assert order == ["first released", "second took it"]
    with host_slot(name, 2), host_slot(name, 2):  # two slots: two at once
        pass


def slot_taken(name: str) -> str:
    with host_slot(name, 1):
        return "second took it"


def test_what_runs_learned_side_by_side_is_each_added():
    start = Memory.from_json({"visits": {"a": 2}, "tries": {"a\tkill": 1}, "value": {"a\tkill": 1.0}, "moves": ["m"]})
    one = Memory.from_json(
        {"visits": {"a": 4, "b": 1}, "tries": {"a\tkill": 2}, "value": {"a\tkill": 0.5}, "moves": ["m", "n"]}
    )
    two = Memory.from_json({"visits": {"a": 3}, "tries": {"a\twait": 1}, "value": {"a\twait": 2.0}, "moves": ["m"]})
    campaign = Memory.from_json(start.to_json())
    campaign.add(start, one)
    campaign.add(start, two)
    assert campaign.visits == {"a": 5, "b": 1} and campaign.tries == {"a\tkill": 2, "a\twait": 1}
    assert campaign.value == {"a\tkill": 0.5, "a\twait": 2.0} and campaign.moves == {"m", "n"}


@pytest.mark.parametrize(
    "extra, args, message",
    [
        ('spark = "nowhere"', [], "campaign.spark 'nowhere': not a Spark master URL"),
        ("", ["--spark", "local[0]"], "--spark 'local[0]': not a Spark master URL"),
        ("runs_per_host = 2", [], "runs_per_host: only for runs on Spark"),
        ('spark = "local[2]"\nruns_per_host = 0', [], "campaign.runs_per_host must be at least 1, not 0"),
    ],
)
def test_bad_spark_settings_are_one_line_and_exit_2(tmp_path, extra, args, message):
    config = tmp_path / "c.toml"
    config.write_text(CAMPAIGN.format(results=tmp_path / "runs", seconds=4, extra=extra))
    done = splitbrain("campaign", "--quiet", *args, str(config))
    assert done.returncode == 2 and message in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and not (tmp_path / "runs").exists()


def test_runs_on_spark_are_local_or_docker(tmp_path):
    config = tmp_path / "c.toml"
    hosts = tmp_path / "hosts.toml"
    hosts.write_text("")
    config.write_text(
        CAMPAIGN.format(results=tmp_path / "runs", seconds=4, extra='spark = "local[2]"\nbackend = "ssh"')
        .replace('backend = "local"\n', "")
        .replace("[targets.guided]", f'hosts = "{hosts}"\n[targets.guided]')
    )
    with pytest.raises(CampaignError, match="backend ssh: runs on Spark are local or docker"):
        spark_runner(config)


def test_a_simulation_on_spark_refuses_the_novelty_search():
    done = splitbrain("simulate", "--quiet", "--search", "novelty", "--spark", "local[2]")
    assert done.returncode == 2 and "--spark: the novelty search learns schedule by schedule" in done.stderr


def test_processes_forked_from_one_walk_the_ports_from_starts_of_their_own():
    from harness.ports import free_port

    free_port()
    starts = []
    for _ in range(3):
        reader, writer = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.write(writer, str(free_port()).encode())
            os._exit(0)
        os.waitpid(pid, 0)
        os.close(writer)
        starts.append(int(os.read(reader, 16)))
        os.close(reader)
    assert len(set(starts)) == 3, starts
