"""A local cluster's ports stay its own as long as it lasts, its nodes running or not: no
other process's port walk (harness/ports.py) can take one and leave a node
that starts (or starts again) unable to listen."""

from __future__ import annotations

from harness.local_cluster import LocalCluster
from harness.ports import is_free


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
