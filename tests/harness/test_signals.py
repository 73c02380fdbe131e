"""Nothing outlives its harness: a SIGKILLed run's reaper removes its
processes, containers and network with no command given; SIGTERM behaves as
Ctrl-C (heal, tear down, keep the history, exit 2); `cluster down` from one
state directory leaves another user's run alone; one campaign per folder."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import docker
import pytest

from harness.ownership import (
    LEDGER,
    RUN_ENV,
    RUN_LABEL,
    alive,
    container_name,
    listed_containers,
    marked_processes,
    read_ledger,
)
from results.recording import PARTIAL, load_history
from tests.harness.test_run import fault_in_force, run_command

pytestmark = pytest.mark.slow
GONE_WITHIN_S = 30.0


def leftovers(run_dir) -> list[str]:
    """What of this run still exists: recorded processes still alive, marked
    processes, labelled containers and networks, a reaper still running."""
    run_id = run_dir.name.removesuffix(PARTIAL)
    _, entries = read_ledger(run_dir / LEDGER)
    left = [f"process {e['process']}" for e in entries if "process" in e and alive(e["process"], e["start"])]
    left += [f"marked process {pid}" for pid in marked_processes(RUN_ENV, run_id)]
    client = docker.from_env()
    selector = {"label": f"{RUN_LABEL}={run_id}"}
    left += [f"container {container_name(c)}" for c in listed_containers(client, selector)]
    left += [f"network {n.name}" for n in client.networks.list(filters=selector)]
    mounted = {line.split()[1] for line in open("/proc/mounts", encoding="utf-8")}
    left += [f"mount {e['mount']}" for e in entries if "mount" in e and e["mount"] in mounted]
    reapers = subprocess.run(["pgrep", "-f", f"harness.reaper {run_dir}"], capture_output=True, text=True).stdout
    return left + [f"reaper {pid}" for pid in reapers.split()]


def wait_until_gone(run_dir, timeout_s=GONE_WITHIN_S) -> list[str]:
    deadline = time.monotonic() + timeout_s
    while (left := leftovers(run_dir)) and time.monotonic() < deadline:
        time.sleep(0.5)
    return left


def ignore_sigint() -> None:
    """What a shell script's `&` does to the commands it starts in the background."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def start_run(tmp_path, backend, nodes, background=False, nemesis="partition,kill,pause"):
    process = subprocess.Popen(
        run_command(tmp_path, "--time-limit", "60", "--nemesis", nemesis, backend=backend, nodes=nodes),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=ignore_sigint if background else None,
    )
    fault_in_force(tmp_path, timeout_s=60)
    [run_dir] = tmp_path.iterdir()
    _, entries = read_ledger(run_dir / LEDGER)
    assert entries, "the run recorded nothing it made"
    return process, run_dir


@pytest.mark.parametrize(
    "backend, nodes, nemesis",
    [("local", "3", "partition,kill,pause,lose-unfsynced"), ("docker", "3", "partition,kill,pause,lose-unfsynced")],
)
def test_sigkill_of_the_harness_leaves_nothing_of_its_run(tmp_path, backend, nodes, nemesis):
    """The data directories are lose-unfsynced mounts on this machine: unmounted too."""
    process, run_dir = start_run(tmp_path, backend, nodes, nemesis=nemesis)
    if "lose-unfsynced" in nemesis:
        assert any("mount" in e for e in read_ledger(run_dir / LEDGER)[1])
    process.kill()
    process.communicate(timeout=10)
    assert wait_until_gone(run_dir) == []
    assert len(load_history(run_dir)) > 10  # history.jsonl survives for `splitbrain check`


@pytest.mark.parametrize("backend", ["local", "docker"])
def test_cluster_down_by_run_id_removes_what_a_run_killed_with_its_reaper_left(tmp_path, backend):
    """docs/faults.md's recovery when the reaper died with the harness: `cluster down
    --run ID` ended the processes and containers but left the run's FUSE
    mounts (dead: their processes gone), and said nothing was running when
    asked again."""
    process, run_dir = start_run(tmp_path, backend, "3", nemesis="partition,kill,pause,lose-unfsynced")
    assert any("mount" in e for e in read_ledger(run_dir / LEDGER)[1])
    reapers = subprocess.run(["pgrep", "-f", f"harness.reaper {run_dir}"], capture_output=True, text=True).stdout
    assert reapers.split(), "the run has no reaper"
    for pid in reapers.split():
        os.kill(int(pid), signal.SIGKILL)
    process.kill()
    process.communicate(timeout=10)
    time.sleep(1)
    assert leftovers(run_dir), "nothing was left to remove: the reaper was not killed in time"
    down = splitbrain("cluster", "down", "--run", run_dir.name.removesuffix(PARTIAL))
    assert down.returncode == 0 and "removed mount" in down.stdout, down.stdout + down.stderr
    assert leftovers(run_dir) == []


# What a run says on stderr when stopped by a signal: these lines of ours, nothing else
# (no asyncio traceback, no "exception was never retrieved", no "Task was destroyed").
OUR_LINES = ("seed: ", "run directory: ", "splitbrain: interrupted", "splitbrain: already stopping")


@pytest.mark.parametrize(
    "backend, nodes, background, signals",
    [
        ("local", "3", True, [signal.SIGTERM, signal.SIGTERM]),
        ("local", "3", False, [signal.SIGINT]),
        ("local", "3", False, [signal.SIGHUP]),
        ("docker", "3", False, [signal.SIGTERM]),
        ("docker", "3", False, [signal.SIGINT]),
        ("docker", "3", False, [signal.SIGHUP]),
    ],
    ids=["local-term-twice", "local-int", "local-hup", "docker-term", "docker-int", "docker-hup"],
)
def test_a_signal_heals_tears_down_and_keeps_the_history(tmp_path, backend, nodes, background, signals):
    """SIGINT, SIGTERM and SIGHUP after load has started. Also when started in
    the background by a script, with Ctrl-C ignored, and when a second
    SIGTERM follows the first (it neither cuts the clean-up short nor ends
    the process with 143). Stderr holds our own lines alone: every interrupt
    once ended in an asyncio traceback (a gather of cancelled tasks whose
    exception nobody retrieved)."""
    process, run_dir = start_run(tmp_path, backend, nodes, background)
    for number, sig in enumerate(signals):
        time.sleep(0.2 * number)
        process.send_signal(sig)
    _, err = process.communicate(timeout=90)
    assert process.returncode == 2 and "interrupted" in err, err
    assert [line for line in err.splitlines() if not line.startswith(OUR_LINES)] == [], err
    history = load_history(run_dir)
    assert (run_dir / "history.parquet").exists() and len(history) > 10
    nemesis = history[history["process"] == -1]
    assert nemesis.iloc[-1]["f"] == "heal-all" and nemesis.iloc[-1]["type"] == "ok"
    assert wait_until_gone(run_dir, timeout_s=5) == []


def splitbrain(*args, timeout=120):
    return subprocess.run([sys.executable, "-m", "harness.cli", *args], capture_output=True, text=True, timeout=timeout)


def test_cluster_down_elsewhere_leaves_a_running_run_alone(tmp_path):
    runs, mine, empty = tmp_path / "runs", tmp_path / "mine", tmp_path / "empty"
    runs.mkdir()
    up = splitbrain("cluster", "up", "--backend", "local", "--state-dir", str(mine))
    assert up.returncode == 0, up.stderr
    state = json.loads((mine / "cluster.json").read_text())
    run = subprocess.Popen(
        run_command(runs, "--time-limit", "12", "--nemesis", "partition,pause"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    fault_in_force(runs)
    empty.mkdir()
    nothing = splitbrain("cluster", "down", "--state-dir", str(empty))
    assert nothing.returncode == 2 and "no record of anything splitbrain made here" in nothing.stderr
    down = splitbrain("cluster", "down", "--state-dir", str(mine))
    assert down.returncode == 0 and down.stdout.count("removed process") == 4  # 3 nodes and the link proxy server
    assert leftovers(mine / state["run_id"]) == []
    out, err = run.communicate(timeout=120)
    assert run.returncode == 0 and "valid: True" in out, out + err


CAMPAIGN = """
[campaign]
name = "busy"
results = "{results}"
time_limit_s = 10
interval_s = 1.5
nemeses = ["partition,pause"]
"""


def test_a_second_campaign_on_a_busy_folder_refuses(tmp_path):
    config = tmp_path / "c.toml"
    config.write_text(CAMPAIGN.format(results=tmp_path / "runs"))
    first = subprocess.Popen(
        [sys.executable, "-m", "harness.cli", "campaign", "--quiet", str(config)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    fault_in_force(tmp_path / "runs" / "busy")
    second = splitbrain("campaign", "--quiet", str(config))
    assert second.returncode == 2 and "already running in this folder" in second.stderr, second.stderr
    assert len(second.stderr.strip().splitlines()) == 1
    out, err = first.communicate(timeout=120)
    assert first.returncode == 0, out + err
    [run_dir] = [p for p in (tmp_path / "runs" / "busy").iterdir() if p.is_dir()]
    assert json.loads((run_dir / "verdict.json").read_text())["valid"] is True
