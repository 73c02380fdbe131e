"""A host port taken between its choice and Docker's bind: the container is
made again on another port, where the run once failed ("address already in
use": two test workers had chosen the same port)."""

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
        squatter.bind(taken)
        squatter.listen()
        cluster.start_all()
        assert cluster.client["n1"] != taken
        cluster.wait_for_leader(20)
        assert cluster.status("n1") is not None
