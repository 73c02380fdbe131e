"""`splitbrain shrink` on a real failing run (local processes): fewer
faults and a shorter run that still fail, written as a campaign file that
fails again when `splitbrain campaign` runs it."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib

import pytest

from tests.harness.test_run import run_command

pytestmark = pytest.mark.slow


def splitbrain(*args):
    return subprocess.run([sys.executable, "-m", "harness.cli", *args], capture_output=True, text=True, timeout=900)


def test_a_failing_run_shrinks_to_a_campaign_that_fails_again(tmp_path):
    runs = tmp_path / "runs"
    failing = subprocess.run(
        run_command(
            runs,
            "--time-limit",
            "12",
            "--interval",
            "2",
            "--nemesis",
            "partition,pause",
            "--topologies",
            "isolate-leader",
            "--bug",
            "ack-before-commit",
            "--seed",
            "3",
            "--nemesis-strategy",
            "random",
        ),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert failing.returncode == 1, failing.stdout + failing.stderr
    [run_dir] = runs.iterdir()
    original = [
        op for op in json.loads((run_dir / "run.json").read_text())["schedule"] if op["f"] in ("partition", "pause")
    ]
    shrunk_file = tmp_path / "shrunk.toml"
    shrunk = splitbrain("shrink", "--trials", "2", "--to", str(shrunk_file), str(run_dir))
    assert shrunk.returncode == 0, shrunk.stdout + shrunk.stderr
    assert "candidate 1:" in shrunk.stdout and f"campaign: {shrunk_file}" in shrunk.stdout
    campaign = tomllib.loads(shrunk_file.read_text())
    schedule = campaign["targets"]["shrunk"]["schedule"]
    left = [op for op in schedule if op["f"] in ("partition", "pause")]
    assert 1 <= len(left) < len(original) and schedule[-1]["f"] == "heal-all"
    assert campaign["campaign"]["time_limit_s"] <= 12 and campaign["campaign"]["bugs"] == ["ack-before-commit"]
    again = splitbrain("campaign", "--quiet", "--results", str(tmp_path / "again"), str(shrunk_file))
    assert again.returncode == 1, again.stdout + again.stderr
    assert "committed-data-loss" in again.stdout


def test_a_simulated_violation_is_written_as_a_run_that_replay_makes_on_a_real_cluster(tmp_path):
    """`simulate --write-schedules` then `replay`: every fault the translated
    schedule names is made on real nodes, at its moment; replay says whether
    the real run found the violation again (not guaranteed: real timing)."""
    from results.recording import load_history

    written, real = tmp_path / "simulated", tmp_path / "real"
    simulated = splitbrain(
        "simulate", "--bug", "ack-before-commit", "--schedules", "20", "--quiet", "--write-schedules", str(written)
    )
    assert simulated.returncode == 1, simulated.stderr
    [run_dir] = sorted(written.iterdir())
    schedule = json.loads((run_dir / "run.json").read_text())["schedule"]
    replayed = splitbrain("replay", str(run_dir), "--results", str(real), "--quiet")
    assert replayed.returncode in (0, 1), replayed.stderr
    assert f"replay of {run_dir.name}: valid false then, valid " in replayed.stdout
    [made] = sorted(real.iterdir())
    history = load_history(made)
    done = history[(history["process"] == -1) & (history["type"] == "ok")]
    assert done["f"].tolist()[: len(schedule)] == [op["f"] for op in schedule]


def test_a_replay_slows_every_link_before_its_nodes_start(tmp_path):
    """The simulation's messages take their delay from its first moment, its
    first election among them: a replay's latency is on every link before
    the real nodes start, so that an election that turns on a message in
    flight runs as slowly as the simulated one did."""
    from harness import sim_schedules
    from results.recording import load_history
    from targets.kraft.target import TARGET

    anomaly = {"seed": 0, "violation": "t=400ms: n2 halted: a node's own error", "steps": []}
    verdict = {"checkers": {"simulation-invariants": {"anomalies": [anomaly]}}}
    [run_dir] = sim_schedules.write(tmp_path / "simulated", TARGET, {"nodes": 3, "observers": 0}, {}, verdict)
    replayed = splitbrain("replay", str(run_dir), "--results", str(tmp_path / "real"), "--quiet")
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr  # (the correct node: valid)
    [made] = sorted((tmp_path / "real").iterdir())
    history = load_history(made)
    done = history[(history["process"] == -1) & (history["type"] == "ok")]
    assert done["f"].tolist()[:3] == ["latency", "rename", "heal-all"]
    slowed_ns = json.loads((made / "run.json").read_text())["wall_start_ns"] + int(done["time_ns"].iloc[0])
    started_ns = min(
        json.loads(line)["ts_ns"] for events in (made / "nodes").glob("*/events.jsonl") for line in events.open()
    )
    assert slowed_ns < started_ns


def test_a_simulated_lossy_network_is_replayed_as_single_messages_dropped_on_real_links(tmp_path):
    """A simulated schedule with a lossy network (every message lost at
    20%, 1.5 simulated seconds before a heal) is written
    with the loss as `message-loss`, and replay drops whole messages on the
    real links at that rate: the heal that ends it names each one, and the
    cluster, its connections never cut, keeps its leader through it."""
    from harness import sim_schedules
    from history.schema import named_nodes
    from results.recording import load_history
    from targets.kraft.target import TARGET

    steps = [("run", 0, 200), ("network", 0, 2), ("run", 0, 1500), ("heal", 0, 0), ("run", 0, 200)]
    anomaly = {"seed": 0, "violation": "t=2100ms: acknowledged append lost: offset 3", "steps": steps}
    verdict = {"checkers": {"simulation-invariants": {"anomalies": [anomaly]}}}
    settings = {"nodes": 3, "observers": 0}
    [run_dir] = sim_schedules.write(tmp_path / "simulated", TARGET, settings, {}, verdict)
    schedule = json.loads((run_dir / "run.json").read_text())["schedule"]
    # (a real heal takes every toxic away; the simulated network stays lossy: the loss comes back)
    made = [op["f"] for op in schedule if op["f"] != "latency"]
    assert made == ["rename", "message-loss", "heal", "message-loss", "heal-all", "heal-all"]
    replayed = splitbrain("replay", str(run_dir), "--results", str(tmp_path / "real"), "--quiet")
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr  # (the correct node: valid)
    [made] = sorted((tmp_path / "real").iterdir())
    history = load_history(made)
    done = history[(history["process"] == -1) & (history["type"] == "ok")]
    [healed] = done[done["f"] == "heal"]["node"]
    dropped = named_nodes(healed)
    assert len(dropped) >= 5 and all(m["kind"] and len(m["link"]) == 2 for m in dropped), dropped
