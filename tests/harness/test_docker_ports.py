"""A host port taken between its choice and Docker's bind: the container is
made again on another port, where the run once failed ("address already in
use": two test workers had chosen the same port; "port is already
allocated": another container of ours held it)."""

from __future__ import annotations

import contextlib
import socket

import pytest

from harness.backends import bring_up

pytestmark = pytest.mark.slow


def test_a_node_whose_client_port_was_taken_starts_on_another(tmp_path):
    with contextlib.ExitStack() as stack:
        cluster, _ = bring_up(stack, "docker", tmp_path, "test-ports", 3, net="iptables")
        taken = cluster.client["n1"]
        squatter = stack.enter_context(socket.socket())
        squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as Go's and asyncio's listeners do
        squatter.bind(taken)
        squatter.listen()
        cluster.start_all()
        assert cluster.client["n1"] != taken
        cluster.wait_for_leader(20)
        assert cluster.status("n1") is not None


def test_a_node_whose_client_port_another_container_holds_starts_on_another(tmp_path):
    """A CI run's Spark campaign failed so: 'Bind for 127.0.0.1:27373 failed: port is already allocated'."""
    import docker

    from harness.docker_cluster import CLIENT_PORT

    client = docker.from_env()
    with contextlib.ExitStack() as stack:
        cluster, _ = bring_up(stack, "docker", tmp_path, "test-ports-held", 3, net="iptables")
        taken = cluster.client["n1"]
        holder = client.containers.run(
            cluster.image, ["sleep", "120"], detach=True, ports={f"{CLIENT_PORT}/tcp": taken}, labels=cluster.labels
        )
        stack.callback(holder.remove, force=True)
        cluster.start_all()
        assert cluster.client["n1"] != taken
        cluster.wait_for_leader(20)
        assert cluster.status("n1") is not None
