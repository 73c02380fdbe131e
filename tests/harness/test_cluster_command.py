"""`splitbrain cluster up|status|down` by hand, on Docker: `down` removes
what its state directory recorded, or one run's objects by id after a crash."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import docker
import pytest

pytestmark = pytest.mark.slow


def splitbrain(*args):
    return subprocess.run([sys.executable, "-m", "harness.cli", *args], capture_output=True, text=True, timeout=180)


def ours(run_id=None):
    label = "splitbrain.run" if run_id is None else f"splitbrain.run={run_id}"
    client = docker.from_env()
    return client.containers.list(all=True, filters={"label": label}) + client.networks.list(filters={"label": label})


def test_up_status_down_on_docker(tmp_path):
    state = str(tmp_path / "state")
    up = splitbrain("cluster", "up", "--backend", "docker", "--nodes", "3", "--state-dir", state)
    try:
        assert up.returncode == 0, up.stderr
        run_id = json.loads((tmp_path / "state" / "cluster.json").read_text())["run_id"]
        assert len(ours(run_id)) == 5  # 3 nodes, the link proxy server, the network
        status = splitbrain("cluster", "status", "--state-dir", state)
        assert status.returncode == 0 and status.stdout.count("state=leader") == 1
        again = splitbrain("cluster", "up", "--backend", "docker", "--state-dir", state)
        assert again.returncode == 2 and "already up" in again.stderr
    finally:
        down = splitbrain("cluster", "down", "--state-dir", state)
    assert down.returncode == 0 and "removed" in down.stdout
    assert ours(run_id) == []
    missing = splitbrain("cluster", "status", "--state-dir", state)
    assert missing.returncode == 2 and "no cluster is up" in missing.stderr


def test_down_by_run_id_removes_that_run_and_nothing_else(tmp_path):
    """After a crash, `down --run ID` finds the run by the marks on what it
    made: a labelled network and a process with the run in its environment.
    Another run's process, started from the same module, is left alone."""
    client = docker.from_env()
    network = client.networks.create("splitbrain-crashed-test", labels={"splitbrain.run": "crashed-test"})

    def proxy(run_id):
        command = [sys.executable, "-m", "harness.toxiproxy", "--listen", "127.0.0.1:0"]
        return subprocess.Popen(command, env={**os.environ, "SPLITBRAIN_RUN": run_id})

    stray, other = proxy("crashed-test"), proxy("someone-elses-run")
    try:
        down = splitbrain("cluster", "down", "--run", "crashed-test")
        assert down.returncode == 0
        assert stray.wait(10) == -9
        assert other.poll() is None
        assert f"process {stray.pid}" in down.stdout and "splitbrain-crashed-test" in down.stdout
        assert ours("crashed-test") == []
    finally:
        for process in (stray, other):
            if process.poll() is None:
                process.kill()
        if client.networks.list(names=["splitbrain-crashed-test"]):
            network.remove()
