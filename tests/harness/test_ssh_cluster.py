"""The SSH backend against real sshd servers (in the project's node image):
it copies the node code over, starts, kills and restarts nodes there; a host
whose key does not match known_hosts is refused with a clear error."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid

import docker
import pandas as pd
import paramiko
import pytest

from harness.docker_image import ensure_image
from harness.ports import free_port, is_free
from harness.ssh_cluster import REMOTE_DIR, SshCluster, SshConnection, SshError, SshHost, SshNode
from tests.targets.nats.test_nats_runs import own_copies

pytestmark = pytest.mark.slow

SSHD = (
    "mkdir -p /run/sshd /root/.ssh && ssh-keygen -A -q && echo {key} > /root/.ssh/authorized_keys"
    " && chmod 600 /root/.ssh/authorized_keys && exec /usr/sbin/sshd -D -e"
)


@pytest.fixture(scope="module")
def hosts(tmp_path_factory):
    """Three sshd containers on one network; yields (SshNode per node, paths)."""
    root = tmp_path_factory.mktemp("ssh")
    key = paramiko.RSAKey.generate(2048)
    key_file = root / "id_rsa"
    key.write_private_key_file(str(key_file))
    client = docker.from_env()
    tag = f"splitbrain-ssh-{uuid.uuid4().hex[:6]}"
    labels = {"splitbrain.run": tag}
    network = client.networks.create(tag, labels=labels)
    containers, nodes = [], {}
    known_hosts = root / "known_hosts"
    try:
        for node in ("n1", "n2", "n3"):
            ssh_port, client_port = free_port(), two_free_ports()
            # The client port and the one after it (a target's further listener:
            # NATS's monitor) are published at the same numbers, as on a host.
            published = {f"{port}/tcp": ("127.0.0.1", port) for port in (client_port, client_port + 1)}
            container = client.containers.create(
                ensure_image(),
                ["bash", "-c", SSHD.format(key=f"'ssh-rsa {key.get_base64()}'")],
                name=f"{tag}-{node}",
                hostname=node,
                labels=labels,
                ports={"22/tcp": ("127.0.0.1", ssh_port), **published},
                network=network.name,
                networking_config={network.name: client.api.create_endpoint_config(aliases=[node])},
            )
            container.start()
            containers.append(container)
            ssh = SshHost("127.0.0.1", ssh_port, "root", key_file, known_hosts)
            nodes[node] = SshNode(ssh, (node, 9000), client_port, ("127.0.0.1", client_port))
        lines = []
        for container, spec in zip(containers, nodes.values()):
            for _ in range(100):
                result = container.exec_run(["cat", "/etc/ssh/ssh_host_ed25519_key.pub"])
                if result.exit_code == 0:
                    break
                time.sleep(0.1)
            kind, blob = result.output.decode().split()[:2]
            lines.append(f"[127.0.0.1]:{spec.ssh.port} {kind} {blob}")
        known_hosts.write_text("\n".join(lines) + "\n")
        _wait_for_sshd(nodes)
        yield nodes, root
    finally:
        for container in containers:
            container.remove(force=True)
        network.remove()


def two_free_ports() -> int:
    """A free port whose next one is free too."""
    while not is_free((port := free_port()) + 1):
        pass
    return port


def _wait_for_sshd(nodes):
    for spec in nodes.values():
        for attempt in range(50):
            try:
                SshConnection(spec.ssh).close()
                break
            except SshError:
                if attempt == 49:
                    raise
                time.sleep(0.1)


def test_a_cluster_over_ssh_elects_survives_a_kill_and_restarts(hosts, tmp_path):
    nodes, _ = hosts
    with SshCluster(tmp_path, nodes) as cluster:
        cluster.start_all()
        leader = cluster.wait_for_leader(20)
        cluster.kill(leader)
        assert not cluster.running(leader)
        new = cluster.wait_for_leader(20, exclude=(leader,))
        assert new != leader
        cluster.start(leader)
        deadline = time.monotonic() + 10
        while (cluster.status(leader) or {}).get("leader") != new and time.monotonic() < deadline:
            time.sleep(0.1)
        status = cluster.status(leader)
        assert status["generation"] == 2 and status["leader"] == new
        cluster.collect(tmp_path / "nodes")
        assert b'"event": "transition"' in (tmp_path / "nodes" / leader / "events.jsonl").read_bytes()
    with SshCluster(tmp_path, nodes) as check:
        check.pids = dict(cluster.pids)
        assert not any(check.running(node) for node in nodes), "close() left a node running"


def test_a_wrong_host_key_is_refused(hosts, tmp_path):
    nodes, _ = hosts
    spec = nodes["n1"].ssh
    wrong = tmp_path / "known_hosts"
    wrong.write_text(f"[127.0.0.1]:{spec.port} ssh-ed25519 {_other_ed25519(hosts)}\n")
    with pytest.raises(SshError, match=r"host key mismatch.*refusing to connect"):
        SshConnection(SshHost(spec.host, spec.port, spec.user, spec.key_file, wrong))


def _other_ed25519(hosts) -> str:
    """n2's host key: a real key, but not n1's."""
    nodes, _ = hosts
    for line in nodes["n2"].ssh.known_hosts.read_text().splitlines():
        if line.startswith(f"[127.0.0.1]:{nodes['n2'].ssh.port} "):
            return line.split()[2]
    raise AssertionError("n2 has no known host key")


def test_an_unknown_host_is_refused(hosts, tmp_path):
    nodes, _ = hosts
    spec = nodes["n1"].ssh
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    with pytest.raises(SshError, match="not found in known_hosts"):
        SshConnection(SshHost(spec.host, spec.port, spec.user, spec.key_file, empty))


def written_hosts_file(nodes, path):
    """The hosts file (harness/ssh_hosts.py) for these nodes, at `path`."""
    spec = next(iter(nodes.values())).ssh
    path.write_text(
        json.dumps(
            {
                "user": "root",
                "key_file": str(spec.key_file),
                "known_hosts": str(spec.known_hosts),
                "nodes": {
                    node: {
                        "ssh": f"{n.ssh.host}:{n.ssh.port}",
                        "raft": "{}:{}".format(*n.raft),
                        "client_port": n.client_port,
                        "client": "{}:{}".format(*n.client),
                    }
                    for node, n in nodes.items()
                },
            }
        )
    )
    return path


def test_splitbrain_run_over_ssh(hosts, tmp_path):
    nodes, _ = hosts
    hosts_file = written_hosts_file(nodes, tmp_path / "hosts.json")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "harness.cli",
            "run",
            "--backend",
            "ssh",
            "--hosts",
            str(hosts_file),
            "--quiet",
            "--results",
            str(tmp_path / "runs"),
            "--time-limit",
            "6",
            "--interval",
            "1",
            "--nemesis",
            "kill,pause,bounce",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "committed-data-loss: True" in result.stdout
    refused = subprocess.run(
        [
            sys.executable,
            "-m",
            "harness.cli",
            "run",
            "--backend",
            "ssh",
            "--hosts",
            str(hosts_file),
            "--nemesis",
            "partition",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused.returncode == 2 and "need a link proxy" in refused.stderr


@pytest.mark.parametrize("target", ["nats", "nats@2.15.1"])
def test_nats_over_ssh_is_judged_from_each_server_s_own_files(hosts, tmp_path, target):
    """A NATS run on hosts over SSH: each server's copy of the stream is its
    message blocks, copied from its host over SFTP into the run's cluster
    folder (they are on no disk of this machine), and the final table holds
    each server's copy as those files hold it. A release of the server
    (`nats@2.15.1`) is copied to each host and runs there."""
    nodes, _ = hosts
    hosts_file = written_hosts_file(nodes, tmp_path / "hosts.json")
    done = subprocess.run(
        [
            *(sys.executable, "-m", "harness.cli", "run", "--backend", "ssh", "--hosts", str(hosts_file)),
            *("--target", target, "--workload", "append", "--quiet", "--results", str(tmp_path / "runs")),
            *("--seed", "4", "--time-limit", "12", "--interval", "3", "--nemesis", "kill,pause"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode in (0, 1), done.stdout + done.stderr
    [run_dir] = (tmp_path / "runs").iterdir()
    final = pd.read_parquet(run_dir / "final.parquet")
    copies = own_copies(run_dir)
    assert set(copies) == set(nodes) and all(copies.values()), {node: len(copy) for node, copy in copies.items()}
    for node, spec in nodes.items():  # the copy is the host's files, every block of them, byte for byte
        connection = SshConnection(spec.ssh)
        try:
            data = f"{REMOTE_DIR}/{node}/data"
            remote = connection.run(f"cd ~/{data} && find . -name '*.blk' -path '*/LOG/msgs/*' -printf '%P\\n'").split()
            local = run_dir / "cluster" / node / "data"
            assert remote and sorted(remote) == sorted(str(p.relative_to(local)) for p in local.rglob("*.blk")), node
            for block in remote:
                assert (local / block).read_bytes() == connection.read(f"{data}/{block}"), (node, block)
        finally:
            connection.close()
    for node, copy in copies.items():
        held = final[final["node"] == node]
        assert dict(zip(held["offset"], held["value"].map(str))) == copy, node
    verdict = json.loads((run_dir / "verdict.json").read_text())
    assert verdict["checkers"]["committed-data-loss"]["valid"] in (True, False), verdict["checkers"]
    version = target.partition("@")[2] or "2.9.10"
    for node in nodes:  # each server says its version as it starts
        assert f"Version:  {version}" in (run_dir / "nodes" / node / "node.log").read_text(), node
