"""Real node processes on 127.0.0.1: elections, commits through the kill of
the leader, recovery after restart, the client API, and a clear refusal to
start on a corrupt disk."""

from __future__ import annotations

import asyncio
import json
import subprocess
import time

import pytest

from harness.local_cluster import LocalCluster
from targets.kraft.client import Client, call

pytestmark = pytest.mark.slow


async def _append_all(address, values, timeout_s=3.0):
    client = await Client.connect(*address)
    try:
        return await asyncio.gather(*[client.call("append", timeout_s, value=v) for v in values])
    finally:
        await client.close()


def append_all(address, values):
    answers = asyncio.run(_append_all(address, values))
    assert all("error" not in answer for answer in answers), answers
    return {answer["offset"]: value for answer, value in zip(answers, values)}


def committed_appends(cluster, node):
    records, start = [], 0
    while batch := call(cluster.client[node], "log", **{"from": start})["records"]:
        records += batch
        start = batch[-1]["offset"] + 1
    return {r["offset"]: r["data"]["value"] for r in records if r["data"]["op"] == "append"}


def wait_caught_up(cluster, nodes, timeout_s=10.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        statuses = [cluster.status(node) for node in nodes]
        if all(statuses) and len({(s["hwm"], s["epoch"]) for s in statuses}) == 1:
            return statuses
        time.sleep(0.05)
    raise TimeoutError(f"{nodes} did not converge: {statuses}")


@pytest.mark.parametrize("nodes", [3, 5])
def test_commits_continue_through_the_kill_of_the_leader_and_the_dead_recover(tmp_path, nodes):
    with LocalCluster(tmp_path, nodes) as cluster:
        cluster.start_all()
        first = cluster.wait_for_leader()
        acked = append_all(cluster.client[first], [f"a{i}" for i in range(50)])
        epoch_before = cluster.status(first)["epoch"]

        cluster.kill(first)
        second = cluster.wait_for_leader(exclude=(first,))
        assert second != first
        acked |= append_all(cluster.client[second], [f"b{i}" for i in range(50)])
        assert cluster.status(second)["epoch"] > epoch_before

        cluster.start(first)
        statuses = wait_caught_up(cluster, cluster.ids)
        restarted = next(s for s in statuses if s["node"] == first)
        assert restarted["generation"] == 2 and restarted["state"] == "follower" and restarted["leader"] == second
        for node in cluster.ids:
            log = committed_appends(cluster, node)
            assert all(log.get(offset) == value for offset, value in acked.items()), f"{node} lost acked appends"


def test_a_full_restart_keeps_epoch_vote_log_and_counts_generations(tmp_path):
    with LocalCluster(tmp_path, 3) as cluster:
        cluster.start_all()
        leader = cluster.wait_for_leader()
        acked = append_all(cluster.client[leader], list(range(20)))
        before = wait_caught_up(cluster, cluster.ids)
        for node in cluster.ids:
            cluster.stop(node)
        cluster.start_all()
        cluster.wait_for_leader()
        after = wait_caught_up(cluster, cluster.ids)
        for old, new in zip(before, after):
            assert new["generation"] == old["generation"] + 1
            assert new["epoch"] > old["epoch"]
            assert new["log_end_offset"] >= old["log_end_offset"]
        for node in cluster.ids:
            assert acked.items() <= committed_appends(cluster, node).items()


def test_client_api_answers_and_redirects(tmp_path):
    with LocalCluster(tmp_path, 3) as cluster:
        cluster.start_all()
        leader = cluster.wait_for_leader()
        follower = next(node for node in cluster.ids if node != leader)
        refused = call(cluster.client[follower], "append", value=1)
        assert refused["error"] == "not-leader" and refused["leader"] == leader
        at = cluster.client[leader]
        assert call(at, "read", key="k")["value"] is None
        assert "error" not in call(at, "write", key="k", value=1)
        mismatch = call(at, "cas", key="k", expected=2, new=3)
        assert (mismatch["error"], mismatch["value"]) == ("cas-mismatch", 1)
        assert "error" not in call(at, "cas", key="k", expected=1, new=3)
        assert call(at, "read", key="k")["value"] == 3
        assert call(at, "bogus")["error"] == "bad-request"
        assert call(at, "write", key="k")["error"] == "bad-request"
        status = cluster.status(leader)
        assert {"node", "generation", "state", "epoch", "leader", "voted_for", "log_end_offset", "hwm"} <= set(status)
        # What is on disk: all of it, once a write is answered (the leader fsyncs before it counts its own).
        assert status["synced_offset"] == status["log_end_offset"] > 0


def test_a_damaged_log_is_cut_back_and_a_corrupt_quorum_state_refused(tmp_path):
    """A log tail that fails its checksum is cut back to the last valid record
    and the node catches up; any other unreadable file stops it in one line."""
    with LocalCluster(tmp_path, 3) as cluster:
        cluster.start_all()
        leader = cluster.wait_for_leader()
        append_all(cluster.client[leader], list(range(5)))
        victim = next(node for node in cluster.ids if node != leader)
        wait_caught_up(cluster, cluster.ids)
        cluster.kill(victim)
        log = cluster.data_dir(victim) / "log.bin"
        raw = bytearray(log.read_bytes())
        raw[-2] ^= 0xFF
        log.write_bytes(bytes(raw))
        cluster.start(victim)
        wait_caught_up(cluster, cluster.ids)
        events = [json.loads(line) for line in cluster.event_log(victim).read_text().splitlines()]
        [cut] = [e for e in events if e["event"] == "log-truncated"]
        assert cut["reason"] == "checksum mismatch" and cut["bytes"] > 0
        assert any(e["event"] == "caught-up" and e["generation"] == cut["generation"] for e in events)
        assert not (cluster.data_dir(victim) / "catching-up").exists()  # a restart now need not wait again
        cluster.kill(victim)
        state = cluster.data_dir(victim) / "quorum-state.json"
        state.write_text('{"epoch": 3, "vot')
        result = subprocess.run(cluster.command(victim), capture_output=True, text=True, timeout=10)
        assert result.returncode == 2
        assert result.stderr.count("\n") == 1
        assert f"{state}: corrupt JSON at byte offset" in result.stderr
