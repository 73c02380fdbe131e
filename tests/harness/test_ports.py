"""A local cluster's ports stay its own as long as it lasts, its nodes running or not: no
other process's port walk (harness/ports.py) can take one and leave a node
that starts (or starts again) unable to listen."""

from __future__ import annotations

import itertools
import subprocess
import sys

from harness import ports
from harness.local_cluster import LocalCluster
from harness.ports import free_port, is_free


def test_a_node_s_ports_are_held_before_it_starts_while_it_starts_and_while_it_is_down(tmp_path):
    with LocalCluster(tmp_path, 1) as cluster:
        ports = [cluster.raft["n1"][1], cluster.client["n1"][1]]
        assert not any(map(is_free, ports))  # chosen, the node not started yet
        cluster.start("n1")
        assert not any(map(is_free, ports))  # starting: no moment for another to take them
        assert cluster.wait_for_leader() == "n1"
        cluster.kill("n1")
        assert not any(map(is_free, ports))  # down
        cluster.start("n1")  # and it listens there again
        assert cluster.wait_for_leader() == "n1"
    assert all(map(is_free, ports))  # let go with the cluster


def test_a_port_another_process_chose_is_not_chosen_again_before_it_is_used(monkeypatch):
    """Two processes' walks reached one port: each tried a bind, let go, and
    both chose it (a CI run's kraft node, 'address already in use'). The
    choice now keeps the port bound, so the second walk passes it by."""
    chooser = subprocess.Popen(
        [sys.executable, "-c", "from harness.ports import free_port; print(free_port(), flush=True); input()"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        chosen = int(chooser.stdout.readline())
        monkeypatch.setattr(ports, "_next", itertools.count(chosen))
        assert free_port() != chosen
    finally:
        chooser.communicate("\n")
