"""etcd 3.4.23 (Debian's etcd-server) as a target, end to end: real etcd
processes on 127.0.0.1 and real containers on Docker, under faults, judged by
the checkers through the capabilities it declares."""

from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd
import pytest

from harness.ownership import LEDGER, alive, read_ledger
from results.history import load_history

pytestmark = pytest.mark.slow


def splitbrain(*args, timeout=240):
    return subprocess.run([sys.executable, "-m", "harness.cli", *args], capture_output=True, text=True, timeout=timeout)


def etcd_run(results, *extra):
    return splitbrain("run", "--target", "etcd", "--workload", "register", "--quiet", "--results", str(results),
                      "--interval", "1.5", "--seed", "4", *extra)  # fmt: skip


def test_etcd_on_the_local_backend_under_kills_and_pauses(tmp_path):
    done = etcd_run(tmp_path, "--time-limit", "10", "--nemesis", "kill,pause,restart,bounce")
    assert done.returncode == 0, done.stdout + done.stderr
    [run_dir] = tmp_path.iterdir()
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["versions"]["etcd"].startswith("3.4.") and meta["capabilities"]["ok_proves_leadership"] is False
    events = pd.read_parquet(run_dir / "events.parquet")
    logged = events[events["source"] == "log"]
    assert {"transition", "vote", "leader"} <= set(logged["event"]) and set(logged["node"]) == {"n1", "n2", "n3"}
    clients = load_history(run_dir).query("process >= 0")
    assert (clients["type"] == "ok").sum() > 100 and set(clients["f"]) == {"read", "write", "cas"}
    verdict = json.loads((run_dir / "verdict.json").read_text())
    assert verdict["checkers"]["linearizable"]["valid"] is True and verdict["checkers"]["election-safety"]["valid"] is True


def test_what_etcd_cannot_take_is_refused_before_the_run(tmp_path):
    for extra, words in [(["--nemesis", "partition"], "no per-link routes"), (["--bug", "stale-read"], "unknown"),
                         (["--no-check-quorum"], "always checks quorum"), (["--workload", "append"], "etcd runs register")]:  # fmt: skip
        done = etcd_run(tmp_path, *extra)
        assert done.returncode == 2 and words in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert list(tmp_path.iterdir()) == []


def test_etcd_on_docker_with_iptables_partitions(tmp_path):
    done = etcd_run(tmp_path, "--backend", "docker", "--nodes", "3", "--net", "iptables", "--time-limit", "12",
                    "--nemesis", "partition")  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    [run_dir] = tmp_path.iterdir()
    nemesis = load_history(run_dir).query("process == -1 and type == 'ok'")
    assert (nemesis["f"] == "partition").sum() >= 2 and (nemesis["f"] == "heal").sum() >= 2
    events = pd.read_parquet(run_dir / "events.parquet")
    assert (events[events["source"] == "log"]["event"] == "transition").any()


def test_cluster_down_removes_etcd_processes(tmp_path):
    state = tmp_path / "state"
    up = splitbrain("cluster", "up", "--target", "etcd", "--state-dir", str(state))
    assert up.returncode == 0, up.stderr
    run_id = json.loads((state / "cluster.json").read_text())["run_id"]
    _, entries = read_ledger(state / run_id / LEDGER)
    processes = [(e["process"], e["start"]) for e in entries if "process" in e]
    assert len(processes) == 3 and all(alive(*p) for p in processes)
    status = splitbrain("cluster", "status", "--state-dir", str(state))
    assert status.returncode == 0 and status.stdout.count("state=leader") == 1, status.stdout
    down = splitbrain("cluster", "down", "--state-dir", str(state))
    assert down.returncode == 0 and down.stdout.count("removed process") == 3
    assert not any(alive(*p) for p in processes)
