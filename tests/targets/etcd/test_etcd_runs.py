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
from results.recording import load_history
from targets.etcd.framing import KINDS
from tests.harness.test_signals import OUR_LINES

pytestmark = pytest.mark.slow


def splitbrain(*args, timeout=240):
    return subprocess.run([sys.executable, "-m", "harness.cli", *args], capture_output=True, text=True, timeout=timeout)


def etcd_run(results, *extra, workload="register"):
    seed = () if "--seed" in extra else ("--seed", "4")
    return splitbrain(
        "run",
        "--target",
        "etcd",
        "--workload",
        workload,
        "--quiet",
        "--results",
        str(results),
        "--interval",
        "1.5",
        *seed,
        *extra,
    )


def test_etcd_on_the_local_backend_under_kills_and_pauses(tmp_path):
    done = etcd_run(tmp_path, "--time-limit", "10", "--nemesis", "kill,pause,restart,bounce")
    assert done.returncode == 0, done.stdout + done.stderr
    [run_dir] = tmp_path.iterdir()
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["versions"]["etcd"].startswith("3.4.") and meta["capabilities"]["ok_proves_leadership"] is False
    # The guided nemesis (the default) aims by the roles etcd's status answers give (its events rows name none).
    aimed = [op["args"]["aim"] for op in meta["schedule"] if "aim" in op["args"]]
    assert len(aimed) >= 3 and {a.split("/")[1] for a in aimed} == {"leader", "follower"}, aimed
    events = pd.read_parquet(run_dir / "events.parquet")
    logged = events[events["source"] == "log"]
    assert {"transition", "vote", "leader"} <= set(logged["event"]) and set(logged["node"]) == {"n1", "n2", "n3"}
    clients = load_history(run_dir).query("process >= 0")
    # Answered under the faults (at least 50 of about 500 asked: a slower machine answered 88 in these 10 s).
    assert (clients["type"] == "ok").sum() > 50 and set(clients["f"]) == {"read", "write", "cas"}
    verdict = json.loads((run_dir / "verdict.json").read_text())
    assert (
        verdict["checkers"]["linearizable"]["valid"] is True and verdict["checkers"]["election-safety"]["valid"] is True
    )
    # --pre-vote is on: the elections that replace a killed or paused leader disrupt no live one.
    assert verdict["checkers"]["availability"]["stats"]["disruptive_elections"] == 0, verdict["checkers"][
        "availability"
    ]


def test_etcd_appends_under_kills_and_power_losses_keep_every_acknowledged_one_on_every_member(tmp_path):
    """The power loss (lose-unfsynced: etcd's data directory on the lazy
    filesystem, its bbolt database mapped) drops what etcd had not fsynced."""
    done = etcd_run(tmp_path, "--time-limit", "10", "--nemesis", "kill,pause,lose-unfsynced", workload="append")
    assert done.returncode == 0, done.stdout + done.stderr
    [run_dir] = tmp_path.iterdir()
    history = load_history(run_dir)
    lost = history[(history["process"] == -1) & (history["f"] == "lose-unfsynced")]
    # Each power loss made and confirmed (the guided nemesis may lose the leader's and a follower's).
    assert len(lost) and list(lost["type"]) == ["invoke", "ok"] * (len(lost) // 2), lost
    clients = history.query("process >= 0")
    acked = clients[clients["type"] == "ok"]
    assert len(acked) > 100 and acked["key"].nunique() > 1 and acked["offset"].notna().all()
    final = pd.read_parquet(run_dir / "final.parquet")
    # Every member holds every list, and each acknowledged append at its place.
    assert set(final["node"]) == {"n1", "n2", "n3"} and len(final) >= 3 * len(acked)
    held = set(zip(final["node"], final["key"], final["offset"], final["value"]))
    assert all(
        (node, key, offset, value) in held
        for node in ("n1", "n2", "n3")
        for key, offset, value in zip(acked["key"], acked["offset"], acked["value"])
    )
    checkers = json.loads((run_dir / "verdict.json").read_text())["checkers"]
    assert checkers["committed-data-loss"]["stats"]["acknowledged"] == len(acked)
    assert checkers["linearizable"]["valid"] is True and checkers["linearizable"]["stats"]["partitions"] > 1


def test_etcd_locks_granted_after_their_lease_are_caught_holding_beside_another(tmp_path):
    """etcd #11456 (3.4.23 lacks the fix): a client that waits for the lock
    longer than its lease lives is granted it all the same, beside the next
    holder; with waits within the lease, the same checker finds nothing.
    Whether two holders' adds overlap is up to timing: with 12 clients a
    client waited about as long as its 3 s lease lived (about 25 of 75 grants
    late), and all three seeds missed it once in CI; with 20 each waits about
    5 s, most grants come after their lease is gone, and seeds 4 to 6 caught it
    with 4 to 14 anomalies each, on an idle machine and on one with both cores
    busy. The bug must be caught in one of the three seeds' runs."""
    for seed in ("4", "5", "6"):
        long_waits = etcd_run(
            tmp_path / f"long-{seed}",
            "--time-limit",
            "20",
            "--nemesis",
            "none",
            "--concurrency",
            "20",
            "--op-timeout",
            "10",
            "--seed",
            seed,
            workload="lock",
        )
        if long_waits.returncode == 1:
            break
    assert long_waits.returncode == 1, long_waits.stdout + long_waits.stderr
    [run_dir] = (tmp_path / f"long-{seed}").iterdir()
    found = json.loads((run_dir / "verdict.json").read_text())["checkers"]["mutual-exclusion"]
    assert found["stats"]["late_grants"] > 0 and {a["kind"] for a in found["anomalies"]} & {
        "same-place-adds",
        "lost-guarded-add",
    }
    short_waits = etcd_run(tmp_path / "short", "--time-limit", "10", "--nemesis", "kill", workload="lock")
    assert short_waits.returncode == 0, short_waits.stdout + short_waits.stderr
    [run_dir] = (tmp_path / "short").iterdir()
    clean = json.loads((run_dir / "verdict.json").read_text())["checkers"]["mutual-exclusion"]
    assert clean["stats"]["acquired"] > 0 and clean["stats"]["late_grants"] == 0


def test_etcd_messages_are_dropped_held_repeated_and_reordered_one_at_a_time_on_the_local_backend(tmp_path):
    """Through the fronts, which frame etcd's peer traffic (targets/etcd/framing.py):
    each message fault names the messages it acted on by their raft type, the
    streams stay up (nothing says its bytes went unframed) and the run is valid."""
    faults = "message-drop,message-hold,message-duplicate,message-reorder"
    done = etcd_run(tmp_path, "--time-limit", "12", "--nemesis", faults, "--seed", "5")
    assert done.returncode == 0 and "not framed" not in done.stderr, done.stdout + done.stderr
    [run_dir] = tmp_path.iterdir()
    history = load_history(run_dir)
    made = history[(history["process"] < 0) & (history["type"] == "ok") & history["f"].str.startswith("message-")]
    acted = [message for node in made["node"] for message in json.loads(node)]
    assert len({f for f, node in zip(made["f"], made["node"]) if json.loads(node)}) >= 2, made.to_string()
    for message in acted:
        assert message["type"].startswith("Msg") and message["kind"] in KINDS.values(), message
        assert set(message["link"]) <= {"n1", "n2", "n3"} and message["ordinal"] >= 1, message


def test_what_etcd_cannot_take_is_refused_before_the_run(tmp_path):
    for extra, words in [
        (["--nemesis", "partition", "--topologies", "halves,one-way"], "one-way cut links one way"),
        (["--nemesis", "latency"], "take no latency"),
        (["--bug", "stale-read"], "--bug: etcd does not take it"),
        (["--no-check-quorum"], "--no-check-quorum: etcd does not take it"),
        (["--nemesis", "clock"], "vDSO"),
        (["--read-lease-ms", "100"], "its options: --no-pre-vote, --serializable-reads"),
    ]:
        done = etcd_run(tmp_path, *extra)
        assert done.returncode == 2 and words in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert list(tmp_path.iterdir()) == []


def test_etcd_partitions_on_the_local_backend_cut_only_the_pairs_they_name(tmp_path):
    """Every member dials one front per peer, which names the dialling node
    from /proc: an isolated member loses its peers, the others keep theirs.
    (How many elections the two take is up to timing: on a loaded machine
    they split their votes, once for a whole 4 s window in CI, or a new
    leader missed its quorum's heartbeats once and was elected again, and in
    CI once they stood at the same moments, four times over, all window
    long. So the two are shown to hear each other by a leader elected, or
    by one of them standing: with pre-vote on, as here, a member stands
    only once the other granted its pre-vote, a request and its answer.)"""
    done = etcd_run(
        tmp_path,
        "--time-limit",
        "20",
        "--interval",
        "4",
        "--nemesis",
        "partition",
        "--topologies",
        "isolate-leader",
        "--nemesis-strategy",
        "random",
    )
    assert done.returncode == 0, done.stdout + done.stderr
    # Our lines alone: every etcd run ended with "Task was destroyed but it is pending!" twice (the fronts).
    assert [line for line in done.stderr.splitlines() if not line.startswith(OUR_LINES)] == [], done.stderr
    [run_dir] = tmp_path.iterdir()
    history = load_history(run_dir)
    faults = history.query("process == -1 and type == 'ok' and f in ('partition', 'heal', 'heal-all')")
    windows = [
        (cut.time_ns, faults[faults["time_ns"] > cut.time_ns]["time_ns"].min(), json.loads(cut.node))
        for cut in faults[faults["f"] == "partition"].itertuples()
    ]
    assert len(windows) >= 2
    events = pd.read_parquet(run_dir / "events.parquet")
    transitions = events[(events["source"] == "log") & (events["event"] == "transition")]
    # An isolated leader never leads while cut off; the two that can still reach each other do.
    for start, end, links in windows:
        [isolated] = set.intersection(*(set(link) for link in links))
        inside = transitions[transitions["time_ns"].between(start, end, inclusive="neither")]
        elected = set(inside[inside["state"] == "leader"]["node"])
        others = inside[inside["node"] != isolated]
        stood = set(others[others["state"] == "candidate"]["node"])
        assert isolated not in elected, (isolated, inside)
        assert elected or stood, (isolated, inside)
    checkers = json.loads((run_dir / "verdict.json").read_text())["checkers"]
    assert all(c["valid"] is True for c in checkers.values()), checkers


def test_etcd_members_removed_and_wiped_come_back_as_new_learners_promoted(tmp_path):
    done = etcd_run(
        tmp_path,
        "--time-limit",
        "14",
        "--interval",
        "3",
        "--nemesis",
        "membership",
        "--seed",
        "3",
        "--nemesis-strategy",
        "random",
    )
    assert done.returncode == 0, done.stdout + done.stderr
    [run_dir] = tmp_path.iterdir()
    changes = load_history(run_dir).query("process == -1 and type == 'ok'")
    made = changes[changes["f"].isin(["remove-member", "add-learner", "promote"])]
    assert {"remove-member", "add-learner", "promote"} <= set(made["f"])
    # Each node added back is a new member: a new id, and its epochs start again without an alarm.
    added = pd.Series([json.loads(v)["node"] for v in made[made["f"] == "add-learner"]["value"]]).value_counts()
    events = pd.read_parquet(run_dir / "events.parquet")
    logged = events[events["source"] == "log"]
    lives = logged.groupby("node")["directory_id"].nunique()
    assert all(lives[node] == 1 + times for node, times in added.items()), (lives, added)
    last = logged[logged["event"] == "configuration"].groupby("node")["voters"].last()
    assert all(len(json.loads(voters)) == 3 for voters in last), last
    checkers = json.loads((run_dir / "verdict.json").read_text())["checkers"]
    assert all(c["valid"] is True for c in checkers.values()), checkers


def test_etcd_on_docker_with_iptables_partitions(tmp_path):
    """iptables is chosen without being asked (etcd's members dial one
    advertised peer URL each), and run.json says so; asked, proxies are refused."""
    refused = etcd_run(tmp_path, "--backend", "docker", "--net", "proxy", "--nemesis", "partition")
    assert refused.returncode == 2 and "no link proxy can stand in one link's way" in refused.stderr, refused.stderr
    done = etcd_run(
        tmp_path,
        "--backend",
        "docker",
        "--nodes",
        "3",
        "--time-limit",
        "12",
        "--nemesis",
        "partition",
        "--nemesis-strategy",
        "random",
    )
    assert done.returncode == 0, done.stdout + done.stderr
    [run_dir] = tmp_path.iterdir()
    assert json.loads((run_dir / "run.json").read_text())["config"]["net"] == "iptables"
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


def test_cluster_down_removes_etcd_containers(tmp_path):
    import docker

    state = tmp_path / "state"
    up = splitbrain("cluster", "up", "--target", "etcd", "--backend", "docker", "--state-dir", str(state))
    assert up.returncode == 0, up.stderr
    run_id = json.loads((state / "cluster.json").read_text())["run_id"]
    client = docker.from_env()
    mine = lambda: client.containers.list(all=True, filters={"label": f"splitbrain.run={run_id}"})  # noqa: E731
    assert len(mine()) == 3
    status = splitbrain("cluster", "status", "--state-dir", str(state))
    assert status.returncode == 0 and status.stdout.count("state=leader") == 1, status.stdout
    down = splitbrain("cluster", "down", "--state-dir", str(state))
    assert down.returncode == 0 and down.stdout.count("removed container") == 3, down.stdout
    assert mine() == []
