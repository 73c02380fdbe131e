"""Each nemesis on a real cluster behind the link mesh, on both backends
(3 local processes; 5 Docker containers): the history records it invoked and
confirmed, the cluster shows the fault in force, and nothing outlives it."""

from __future__ import annotations

import json
import os
import time

import docker
import pytest

from history.operations import NemesisOp
from nemesis.faults.wipe import wiped
from targets.kraft.client import call

from .rig import rig as make_rig

pytestmark = pytest.mark.slow


def wait_until(predicate, timeout_s=8.0, what="condition"):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def completion(rig, f):
    rows = rig.history()
    done = rows[(rows["f"] == f) & (rows["type"] != "invoke")]
    assert len(done) == 1 and done.iloc[0]["type"] == "ok", done
    invoked = rows[(rows["f"] == f) & (rows["type"] == "invoke")].iloc[0]
    assert invoked["time_ns"] <= done.iloc[0]["time_ns"]
    return json.loads(done.iloc[0]["node"])


BACKENDS = [("local", 3), ("docker", 5)]


@pytest.fixture(params=BACKENDS, ids=[b for b, _ in BACKENDS])
def rig(request, tmp_path):
    backend, nodes = request.param
    with make_rig(tmp_path, backend, nodes) as rig:
        yield rig


def leader_epoch(rig, exclude=()):
    statuses = [rig.cluster.status(n) for n in rig.cluster.ids if n not in exclude]
    leaders = [s for s in statuses if s and s["state"] == "leader"]
    return max(((s["epoch"], s["node"]) for s in leaders), default=None)


def agreed_leader(rig):
    """The leader every node names, itself included; else None."""
    named = {(rig.cluster.status(n) or {}).get("leader") for n in rig.cluster.ids}
    return named.pop() if len(named) == 1 else None


def test_isolating_the_leader_elects_another_and_heal_restores_one(rig):
    old_epoch, old = leader_epoch(rig)
    rig.nemesis.invoke(NemesisOp(0, "partition", {"topology": "isolate-leader"}))
    cut = completion(rig, "partition")
    assert sorted(map(tuple, cut)) == sorted(
        {(old, n) for n in rig.cluster.ids if n != old} | {(n, old) for n in rig.cluster.ids if n != old}
    )
    epoch, new = wait_until(lambda: leader_epoch(rig, exclude=(old,)), what="a new leader")
    assert new != old and epoch > old_epoch
    wait_until(lambda: rig.cluster.status(old)["state"] != "leader", what="the old leader to resign")
    rig.nemesis.invoke(NemesisOp(0, "heal"))
    wait_until(lambda: rig.cluster.status(old)["leader"] == new, what="the old leader to follow")


def test_one_way_cut_stops_only_one_direction(rig):
    src, dst = "n1", "n2"
    rig.links.cut([(src, dst)])
    assert not rig.links.server.use().get_proxy(f"{src}-{dst}").enabled
    assert rig.links.server.use().get_proxy(f"{dst}-{src}").enabled


def test_pause_stops_the_process_and_resume_brings_it_back(rig):
    _, old = leader_epoch(rig)
    rig.nemesis.invoke(NemesisOp(0, "pause", {"target": "leader"}))
    assert completion(rig, "pause") == [old]
    assert rig.cluster.status(old, 0.3) is None
    wait_until(lambda: leader_epoch(rig, exclude=(old,)), what="a leader among the others")
    rig.nemesis.invoke(NemesisOp(0, "resume"))
    assert completion(rig, "resume") == [old]
    wait_until(lambda: rig.cluster.status(old), what="the resumed node to answer")


def test_kill_and_start_begin_a_new_generation(rig):
    rig.nemesis.invoke(NemesisOp(0, "kill", {"target": "one", "seed": 1}))
    [victim] = completion(rig, "kill")
    assert not rig.cluster.running(victim)
    rig.nemesis.invoke(NemesisOp(0, "start"))
    assert completion(rig, "start") == [victim]
    assert wait_until(lambda: rig.cluster.status(victim), what="the restarted node")["generation"] == 2


@pytest.mark.parametrize("fault", ["restart", "bounce"])
def test_restart_and_bounce_keep_the_disk(rig, fault):
    _, old = leader_epoch(rig)
    before = rig.cluster.status(old)
    rig.nemesis.invoke(NemesisOp(0, fault, {"target": "leader"}))
    assert completion(rig, fault) == [old]
    after = wait_until(lambda: rig.cluster.status(old), what="the node back")
    assert after["generation"] == before["generation"] + 1
    assert after["directory_id"] == before["directory_id"] and after["epoch"] >= before["epoch"]


def test_wipe_loses_the_disk(rig):
    victim = "n1"
    before = rig.cluster.status(victim)
    wiped(rig.nemesis, victim)
    after = wait_until(lambda: rig.cluster.status(victim), what="the wiped node back")
    assert after["generation"] == 1 and after["directory_id"] != before["directory_id"]
    # Back as an observer: not a voter under its new directory until it is added again.
    assert not after["voter"]
    rig.nemesis.invoke(NemesisOp(0, "rejoin"))
    assert completion(rig, "rejoin") == [victim]
    rejoined = wait_until(lambda: (s := rig.cluster.status(victim)) and s["voter"] and s, what="the node a voter again")
    assert [victim, after["directory_id"]] in rejoined["voters"] and len(rejoined["voters"]) == len(rig.cluster.ids)


def test_latency_slows_commits_by_at_least_the_added_delay(rig):
    _, leader = leader_epoch(rig)

    def append_ms():
        start = time.perf_counter()
        assert "error" not in call(rig.cluster.client[leader], "append", 5.0, value=1)
        return (time.perf_counter() - start) * 1000

    base = min(append_ms() for _ in range(5))
    rig.nemesis.invoke(NemesisOp(0, "latency", {"latency_ms": 100, "jitter_ms": 0}))
    assert len(completion(rig, "latency")) == len(rig.links.links)
    slowed = min(append_ms() for _ in range(5))
    assert slowed - base >= 90, (base, slowed)
    rig.nemesis.invoke(NemesisOp(0, "heal"))
    assert min(append_ms() for _ in range(5)) < base + 50


def test_local_teardown_leaves_no_process_behind(tmp_path):
    with make_rig(tmp_path, "local") as rig:
        pids = [p.pid for p in rig.cluster.processes.values()]
        rig.nemesis.invoke(NemesisOp(0, "pause", {"target": "leader"}))
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_docker_teardown_leaves_no_container_or_network_behind(tmp_path):
    with make_rig(tmp_path, "docker", 3) as rig:
        label = f"splitbrain.run={rig.cluster.run_id}"
        rig.nemesis.invoke(NemesisOp(0, "pause", {"target": "leader"}))
    client = docker.from_env()
    assert client.containers.list(all=True, filters={"label": label}) == []
    assert client.networks.list(filters={"label": label}) == []


def test_iptables_isolation_of_the_leader_elects_another_and_heals(tmp_path):
    with make_rig(tmp_path, "docker", 3, net="iptables") as rig:
        old_epoch, old = leader_epoch(rig)
        rig.nemesis.invoke(NemesisOp(0, "partition", {"topology": "isolate-leader"}))
        assert len(completion(rig, "partition")) == 4
        epoch, new = wait_until(lambda: leader_epoch(rig, exclude=(old,)), what="a new leader")
        assert new != old and epoch > old_epoch
        rig.nemesis.invoke(NemesisOp(0, "heal"))
        wait_until(lambda: (rig.cluster.status(old) or {}).get("leader") == new, what="the old leader to follow")
        # A brief cut's own rules go again, and only those.
        rig.links.cut([("n1", "n2"), ("n3", "n2")])
        rig.links.restore([("n1", "n2")])
        assert rig.cluster.exec("n2", ["iptables", "-S", "INPUT"]).count("-j DROP") == 1


def test_every_topology_cuts_exactly_its_links_on_docker(tmp_path):
    from nemesis import topologies

    with make_rig(tmp_path, "docker", 5) as rig:
        server = rig.links.server.use()
        for topology in ("isolate", "isolate-leader", "halves", "majorities-ring", "bridge", "flip-flop", "one-way"):
            if topology == "flip-flop":  # aimed at the leader: once the heal before has had its election, if any
                leader = wait_until(lambda: agreed_leader(rig), what="a leader every node follows")
            done = rig.nemesis.invoke(NemesisOp(0, "partition", {"topology": topology, "seed": 3}))
            cut = {tuple(link) for link in json.loads(done["node"])}
            disabled = {tuple(name.split("-")) for name, proxy in server.proxies().items() if not proxy.enabled}
            assert cut and disabled == cut, topology
            if topology == "flip-flop":
                assert len(cut) == 4 and any(leader in link for link in cut), (leader, cut)
            rig.nemesis.invoke(NemesisOp(0, "heal"))
            assert all(proxy.enabled for proxy in server.proxies().values())
        assert topologies.links(topologies.one_way("n1", "n2")) == {("n1", "n2")}


def test_a_flicker_cuts_a_nodes_links_briefly_and_a_stall_pauses_it_briefly(tmp_path):
    """On the real mesh: while a partition holds n1-n2 both ways, a flicker
    of n2 disables its other proxies (seen by a poll beside it) and enables
    them again, leaving the partition's; a stall of the leader silences it
    for its span and resumes it."""
    import threading

    with make_rig(tmp_path, "local", 3) as rig:
        server = rig.links.server.use()
        rig.links.cut([("n1", "n2"), ("n2", "n1")])
        rig.nemesis.cut |= {("n1", "n2"), ("n2", "n1")}
        seen, done = [], threading.Event()

        def watch():
            while not done.is_set():
                seen.append({name for name, proxy in server.proxies().items() if not proxy.enabled})

        watcher = threading.Thread(target=watch)
        watcher.start()
        started = time.monotonic()
        rig.nemesis.invoke(NemesisOp(0, "flicker", {"nodes": ["n2"], "cut_ms": 300, "times": 2, "gap_ms": 300}))
        took = time.monotonic() - started
        done.set()
        watcher.join()
        assert completion(rig, "flicker") == ["n2"] and took >= 0.9
        assert {"n1-n2", "n2-n1", "n2-n3", "n3-n2"} in seen
        # Once it is over (the watcher's last look may have come while it restored them one by one):
        assert {name for name, proxy in server.proxies().items() if not proxy.enabled} == {"n1-n2", "n2-n1"}

        _, old = leader_epoch(rig)
        silent = []
        stall = threading.Thread(
            target=rig.nemesis.invoke, args=(NemesisOp(0, "stall", {"target": "leader", "for_ms": 1500}),)
        )
        stall.start()
        time.sleep(0.5)
        silent.append(rig.cluster.status(old, 0.3))
        stall.join()
        assert silent == [None] and completion(rig, "stall") == [old] and not rig.nemesis.paused
        wait_until(lambda: rig.cluster.status(old), what="the stalled node to answer")
