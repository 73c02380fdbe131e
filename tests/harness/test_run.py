"""`splitbrain run` as a user runs it: a verdict and a complete run directory
(local processes, and 5 Docker containers); Ctrl-C heals, tears down and
keeps the history."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import docker
import pandas as pd
import pytest

from harness.ownership import RUN_ENV, marked_processes
from results.checking import check_run
from results.recording import PARTIAL, load_history
from results.report import roles_for
from tests.results.test_exporter import round_trip

pytestmark = pytest.mark.slow


def run_command(results, *extra, backend="local", nodes="3"):
    return [
        sys.executable,
        "-m",
        "harness.cli",
        "run",
        "--backend",
        backend,
        "--nodes",
        nodes,
        "--quiet",
        "--results",
        str(results),
        "--interval",
        "1.5",
        *(() if "--seed" in extra else ("--seed", "0")),
        *extra,
    ]


@pytest.fixture
def leftovers(tmp_path):
    """Processes still running of this test's runs: anything started from its
    results root (nodes), and anything marked with one of its run ids (the
    link proxy server too). Other runs on the machine are not counted."""

    def still_running() -> str:
        nodes = subprocess.run(["pgrep", "-af", str(tmp_path)], capture_output=True, text=True).stdout
        run_ids = {d.name.removesuffix(PARTIAL) for d in tmp_path.iterdir() if d.is_dir()}
        marked = sorted(pid for run_id in run_ids for pid in marked_processes(RUN_ENV, run_id))
        return nodes + " ".join(map(str, marked))

    return still_running


def fault_in_force(results, timeout_s=30.0) -> None:
    """Wait until the live history shows a fault confirmed and not yet undone."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for history in results.glob("*/history.jsonl"):
            rows = [json.loads(line) for line in history.read_text().splitlines() if line.endswith("}")]
            done = [r for r in rows if r["process"] == -1 and r["type"] == "ok"]
            if done and done[-1]["f"] in ("partition", "pause"):
                return
        time.sleep(0.1)
    raise AssertionError("no fault came into force")


@pytest.mark.parametrize("backend, nodes", [("local", "3"), ("docker", "5")])
def test_a_campaign_writes_a_checked_run_directory(tmp_path, backend, nodes, leftovers):
    faults = "partition,kill,pause,bounce,latency,restart"
    # 15 s: under CI's load a Docker kill and its heal can take 5 s, and 10 s then held only 2 cells.
    result = subprocess.run(
        run_command(tmp_path, "--time-limit", "15", "--nemesis", faults, backend=backend, nodes=nodes),
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    [run_dir] = tmp_path.iterdir()
    for name in ("run.json", "history.jsonl", "history.parquet", "events.parquet", "final.parquet", "verdict.json"):
        assert (run_dir / name).exists(), name
    verdict = json.loads((run_dir / "verdict.json").read_text())
    assert verdict["valid"] is True and set(verdict["checkers"]) >= {"committed-data-loss", "election-safety"}
    # Pre-Vote is on: an election after the leader's kill, pause, bounce or restart disrupts no live leader.
    assert verdict["checkers"]["availability"]["stats"]["disruptive_elections"] == 0, verdict["checkers"][
        "availability"
    ]
    # What the faults tried, by the role of what they hit: the report shows it as a table. A node fault's
    # role is the state of the node it hit (a bounce during an election may hit only candidates).
    assert verdict["coverage"]["hit"] >= 3 and {c["role"] for c in verdict["coverage"]["cells"]} & set(
        roles_for("bounce")
    )
    assert "<table class='coverage'>" in (run_dir / "report.html").read_text()
    history = load_history(run_dir)
    nemesis = history[history["process"] == -1]
    assert (nemesis["type"] == "invoke").sum() == (nemesis["type"] != "invoke").sum() >= 3
    # One clock: run.json's schedule says when each fault was asked for, in the history's seconds.
    meta = json.loads((run_dir / "run.json").read_text())
    invoked = nemesis[nemesis["type"] == "invoke"]
    assert [op["f"] for op in meta["schedule"]] == invoked["f"].tolist()
    lags = sorted(t / 1e9 - op["at_s"] for op, t in zip(meta["schedule"], invoked["time_ns"]))
    assert lags[0] > -0.01 and lags[len(lags) // 2] < 0.2, lags
    assert history[history["process"] >= 0]["time_ns"].min() / 1e9 >= meta["load_start_s"] > 0
    assert (history[history["process"] >= 0]["type"] == "ok").sum() > 50
    events = pd.read_parquet(run_dir / "events.parquet")
    assert {"status", "transition", "commit"} <= set(events["event"])
    assert f"run directory: {run_dir}" in result.stderr and "valid: True" in result.stdout
    assert leftovers() == ""
    assert docker.from_env().containers.list(all=True, filters={"label": f"splitbrain.run={run_dir.name}"}) == []


def test_register_campaign_and_jepsens_process_rule(tmp_path):
    result = subprocess.run(
        run_command(tmp_path, "--time-limit", "8", "--workload", "register", "--nemesis", "partition,pause"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    [run_dir] = tmp_path.iterdir()
    clients = load_history(run_dir).query("process >= 0")
    assert set(clients["f"]) == {"read", "write", "cas"}
    assert (clients["type"] == "ok").sum() > 30
    for process, ops in clients.groupby("process"):
        kinds = ops["type"].tolist()
        # invoke/completion alternate, and a process ends at its first `info`.
        assert kinds[::2] == ["invoke"] * len(kinds[::2]) and "invoke" not in kinds[1::2], process
        assert "info" not in kinds[:-1], process
    # Exported for Jepsen's tools and imported back: the same linearizability verdict.
    again = round_trip(run_dir, tmp_path)
    assert check_run(again)["checkers"]["linearizable"]["valid"] is True
    assert json.loads((run_dir / "verdict.json").read_text())["checkers"]["linearizable"]["valid"] is True


def in_the_foreground() -> None:
    """Ctrl-C as a terminal's foreground command takes it: pytest itself may
    have been started in the background by a script, whose `&` left SIGINT
    ignored for it and everything it starts (the run would then not stop)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_heals_tears_down_and_keeps_the_history(tmp_path, leftovers):
    process = subprocess.Popen(
        run_command(tmp_path, "--time-limit", "60", "--nemesis", "partition,pause"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=in_the_foreground,
    )
    fault_in_force(tmp_path)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 2, err
    [run_dir] = tmp_path.iterdir()
    history = load_history(run_dir)
    assert (run_dir / "history.parquet").exists()
    assert len(history) > 20
    nemesis = history[history["process"] == -1]
    assert nemesis.iloc[-1]["f"] == "heal-all" and nemesis.iloc[-1]["type"] == "ok"
    assert "interrupted" in err
    assert leftovers() == ""


def test_isolating_the_leader_shows_in_the_history_on_docker(tmp_path, leftovers):
    """From the run directory alone: in each isolate-leader window the isolated
    node commits nothing more, and another node leads a newer epoch. Windows
    of 3 s: the majority stands one fetch timeout (1 s) after the cut, and a
    split vote or two on a loaded machine took the rest of a 2 s window
    (the leader came 12 ms after the heal)."""
    result = subprocess.run(
        run_command(
            tmp_path,
            "--time-limit",
            "13",
            "--interval",
            "3",
            "--nemesis",
            "partition",
            "--topologies",
            "isolate-leader",
            "--nemesis-strategy",
            "random",
            backend="docker",
            nodes="5",
        ),
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    [run_dir] = tmp_path.iterdir()
    history = load_history(run_dir)
    events = pd.read_parquet(run_dir / "events.parquet")
    logged = events[events["source"] == "log"]
    nemesis = history[(history["process"] == -1) & (history["type"] == "ok")].reset_index(drop=True)
    windows = [
        (json.loads(row["node"]), row["time_ns"], nemesis.loc[i + 1, "time_ns"])
        for i, row in nemesis.iterrows()
        if row["f"] == "partition"
    ]
    assert len(windows) >= 2
    for links, start, end in windows:
        [isolated] = set.intersection(*({a, b} for a, b in links))
        inside = logged[(logged["time_ns"] > start + 100_000_000) & (logged["time_ns"] < end)]
        assert inside[(inside["node"] == isolated) & (inside["event"] == "commit")].empty
        before = logged[logged["time_ns"] <= start]["epoch"].max()
        new_leaders = inside[(inside["state"] == "leader") & (inside["event"] == "transition")]
        assert (new_leaders["node"] != isolated).any() and (new_leaders["epoch"] > before).all()
    assert leftovers() == ""


def schedule_offsets(run_dir) -> list[tuple]:
    """The run's schedule as offsets from the start of load: what a replay repeats."""
    meta = json.loads((run_dir / "run.json").read_text())
    return [
        (round(op["at_s"] - meta["load_start_s"], 3), op["f"], json.dumps(op["args"], sort_keys=True))
        for op in meta["schedule"]
    ]


def test_repeat_and_replay_run_the_same_schedule_again(tmp_path, leftovers):
    repeated = subprocess.run(
        run_command(
            tmp_path,
            "--time-limit",
            "4",
            "--nemesis",
            "partition,kill",
            "--nemesis-strategy",
            "random",
            "--seed",
            "5",
            "--repeat",
            "2",
        ),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert repeated.returncode == 0, repeated.stdout + repeated.stderr
    assert "repeat: 0 of 2 runs found a violation, 0 could not decide" in repeated.stdout
    first, second = sorted(tmp_path.iterdir())
    assert schedule_offsets(first) == schedule_offsets(second) and len(schedule_offsets(first)) >= 3
    replayed = subprocess.run(
        [sys.executable, "-m", "harness.cli", "replay", "--quiet", str(first)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert f"replay of {first.name}: valid true then, valid true now: reproduced" in replayed.stdout
    assert set(tmp_path.iterdir()) == {
        first,
        second,
        tmp_path / f"replay-{first.name}",
    }  # beside the runs, not among them
    [third] = (tmp_path / f"replay-{first.name}").iterdir()
    assert schedule_offsets(third) == schedule_offsets(first)
    assert json.loads((third / "run.json").read_text())["config"]["run_id"] is None
    assert leftovers() == ""
