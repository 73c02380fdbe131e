"""NATS JetStream 2.9.10 (Debian's nats-server) as a target, end to end:
real servers on 127.0.0.1 and in containers, under faults, judged by the
checkers through the capabilities it declares; each replica's own copy of
the stream read back and compared place by place."""

from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd
import pytest

from results.recording import load_history
from targets.nats.blocks import stream_messages
from targets.nats.framing import KINDS
from targets.nats.streams import STREAM
from targets.nats.target import STORE

pytestmark = pytest.mark.slow


def nats_run(results, *extra, workload="append"):
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "harness.cli",
            "run",
            "--target",
            "nats",
            "--workload",
            workload,
            "--quiet",
            "--results",
            str(results),
            "--seed",
            "4",
            *extra,
        ],
        capture_output=True,
        text=True,
        timeout=400,
    )


def own_copies(run_dir) -> dict[str, dict[int, str]]:
    """Each server's stream as its own files hold it (the run's cluster folder), offset -> value."""
    return {
        server.name: {
            sequence - 1: str(json.loads(body))
            for sequence, body in stream_messages(server / "data" / STORE / STREAM).items()
        }
        for server in sorted((run_dir / "cluster").iterdir())
        if server.is_dir()
    }


def test_nats_on_the_local_backend_under_kills_and_pauses(tmp_path):
    """Valid; or, where nats-server 2.9.10 lets its replicas disagree
    (docs/targets.md's NATS section: a timed-out publish in one replica's stream where
    the others hold an acknowledged append; a leader acknowledging appends
    at sequences already acknowledged, its copy never meeting the others'),
    committed-data-loss false, each anomaly it names confirmed in the
    servers' own files, beside linearizable at most."""
    done = nats_run(tmp_path, "--time-limit", "24", "--interval", "4", "--nemesis", "kill,pause")
    assert done.returncode in (0, 1), done.stdout + done.stderr
    [run_dir] = tmp_path.iterdir()
    copies = own_copies(run_dir)
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["versions"]["nats-server"].startswith("2.9.") and meta["capabilities"]["ok_proves_leadership"] is False
    aimed = [op["args"]["aim"] for op in meta["schedule"] if "aim" in op["args"]]
    assert aimed and {a.split("/")[0] for a in aimed} <= {"kill", "pause"}, aimed
    history = load_history(run_dir)
    acked = history[(history["f"] == "append") & (history["type"] == "ok")]
    assert set(copies) == {"n1", "n2", "n3"}
    events = pd.read_parquet(run_dir / "events.parquet")
    logged = events[events["source"] == "log"]
    assert {"transition", "vote"} <= set(logged["event"]) and logged["epoch"].max() >= 1
    verdict = json.loads((run_dir / "verdict.json").read_text())
    judged = {name: result["valid"] for name, result in verdict["checkers"].items()}
    if done.returncode == 0:
        # Every replica holds the same records, place by place, as far as the shortest, and every
        # acknowledged append among them. Past it, one may hold a publish that timed out and that
        # no later append took the place of: a restarted leader's stream keeps one (docs/track-record.md),
        # and with none acknowledged after it (a local CI run, 2026-12-08: the stream took no append
        # after the first fault, 1.9 s in) the others hold nothing there, so nothing acknowledged is lost.
        shortest = min(len(c) for c in copies.values())
        assert len({json.dumps([c[k] for k in range(shortest)]) for c in copies.values()}) == 1
        assert set(acked["value"].astype(str)) <= {copies["n1"][k] for k in range(shortest)}
        timed_out = set(history.loc[history["type"] == "info", "value"].astype(str))
        assert all(v in timed_out for c in copies.values() for k, v in c.items() if k >= shortest), copies
        assert judged["committed-data-loss"] is True
        return
    assert judged["committed-data-loss"] is False, judged
    assert {name for name, valid in judged.items() if valid is False} <= {"committed-data-loss", "linearizable"}, judged
    for anomaly in verdict["checkers"]["committed-data-loss"]["anomalies"]:
        held = {node: copy.get(anomaly["offset"]) for node, copy in copies.items()}
        if anomaly["kind"] == "lost-acknowledged-append":
            lacking = {node for node, value in held.items() if value != str(anomaly["value"])}
            assert lacking == set(anomaly["nodes"]), (anomaly, held)
        else:
            assert anomaly["kind"] == "divergent-committed-logs" and len(set(held.values())) > 1, (anomaly, held)


def test_raft_messages_on_nats_routes_are_held_dropped_repeated_and_reordered_one_at_a_time(tmp_path):
    """Through the fronts, which frame the routes' traffic into JetStream's
    Raft messages (targets/nats/framing.py): each message fault names the
    messages it acted on by their Raft type, nothing went unframed, and the
    run is valid, or invalid only as 2.9.10's own bugs make a run (above)."""
    faults = "message-drop,message-hold,message-duplicate,message-reorder"
    done = nats_run(tmp_path, "--time-limit", "20", "--nemesis", faults, "--seed", "5")
    assert done.returncode in (0, 1) and "not framed" not in done.stderr, done.stdout + done.stderr
    [run_dir] = tmp_path.iterdir()
    history = load_history(run_dir)
    made = history[(history["process"] < 0) & (history["type"] == "ok") & history["f"].str.startswith("message-")]
    acted = [message for node in made["node"] for message in json.loads(node)]
    assert acted, made.to_string()
    for message in acted:
        assert message["type"] in KINDS and message["kind"] == KINDS[message["type"]], message
        assert set(message["link"]) <= {"n1", "n2", "n3"} and message["ordinal"] >= 1, message
    verdict = json.loads((run_dir / "verdict.json").read_text())
    failed = {name for name, result in verdict["checkers"].items() if result["valid"] is False}
    assert failed <= {"committed-data-loss", "linearizable"}, failed


def test_membership_scales_the_stream_down_and_back(tmp_path):
    """`--nemesis membership` on NATS scales the workload's stream: down (a
    follower's disk lost: one replica fewer; followers removed: one or two
    fewer), then back to 3 replicas, each change a `scale-replicas` row with
    the servers the answer names (not yet the new replica: it is placed
    after the answer). Every server holds the stream again at the end, and
    every acknowledged append is in each copy."""
    done = nats_run(
        tmp_path, "--time-limit", "24", "--interval", "4", "--nemesis", "membership", "--nemesis-strategy", "random"
    )
    assert done.returncode == 0, done.stdout + done.stderr
    [run_dir] = tmp_path.iterdir()
    history = load_history(run_dir)
    changes = history[(history["f"] == "scale-replicas") & (history["type"] == "ok")]
    asked = [json.loads(value)["replicas"] for value in changes["value"]]
    assert min(asked) < 3 and asked[-1] == 3, asked
    rejoined = history[(history["f"] == "rejoin") & (history["type"] == "ok")]
    assert rejoined["node"].map(json.loads).map(len).min() >= 1, rejoined
    copies = own_copies(run_dir)
    acked = set(history[(history["f"] == "append") & (history["type"] == "ok")]["value"].astype(str))
    assert acked and all(acked <= set(copy.values()) for copy in copies.values()), {
        n: len(c) for n, c in copies.items()
    }


def test_nats_on_docker_with_links_cut_per_pair(tmp_path):
    done = nats_run(
        tmp_path,
        "--backend",
        "docker",
        "--time-limit",
        "20",
        "--interval",
        "4",
        "--nemesis",
        "partition",
        "--nemesis-strategy",
        "random",
        workload="register",
    )
    assert done.returncode in (0, 2), done.stdout + done.stderr  # linearizability may run out of its budget: unknown
    [run_dir] = tmp_path.iterdir()
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["config"]["net"] == "iptables"
    history = load_history(run_dir)
    cut = history[(history["f"] == "partition") & (history["type"] == "ok")]
    assert len(cut) and all(json.loads(links) for links in cut["node"])
    assert (history[history["f"].isin(["read", "write"])]["type"] == "ok").sum() > 20
    verdict = json.loads((run_dir / "verdict.json").read_text())
    assert all(result["valid"] is not False for result in verdict["checkers"].values()), verdict
