"""Bringing up a cluster of any backend together with its link applier: the
one place `splitbrain run`, `splitbrain cluster up` and the tests get both from.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import targets
from harness.cluster import DEFAULT_TARGET
from harness.attributed_links import AttributedLinks
from harness.iptables_links import DirectLinks, IptablesLinks
from harness.links import OwnToxiproxy, ToxiproxyServer, wait_for_api
from harness.mesh import LinkMesh
from harness.ownership import Ownership


def bring_up(
    stack: contextlib.ExitStack,
    backend: str,
    root: Path,
    run_id: str,
    nodes: int = 3,
    options: dict | None = None,
    net: str = "proxy",
    toxiproxy: str | None = None,
    hosts: Path | None = None,
    initial_voters: int | None = None,
    reaper: bool = True,
    target: str = DEFAULT_TARGET,
    lazy_disks: bool = False,
    clock_faults: bool = False,
):
    """(cluster, links), not started; `stack` tears down everything made here
    (`stack.pop_all()` keeps it). `links` is a LinkMesh when links go through
    proxies, and the cluster's nodes are routed through it.

    Everything made is recorded in `root/owned.jsonl`; with `reaper`, a
    watchdog removes it should this process die before `stack` unwinds
    (`splitbrain cluster up` goes without: its cluster outlives the command).
    `lazy_disks`: data directories on the lose-unfsynced filesystem;
    `clock_faults`: node clocks under libfaketime (both local and Docker backends)."""
    # Absolute: Docker binds only absolute host folders, and a results folder is often relative (runs/).
    root = Path(root).absolute()
    ownership = Ownership(root, run_id)
    if reaper:
        stack.callback(ownership.watch().release)
    timeouts = dict(
        options=options,
        initial_voters=initial_voters,
        ownership=ownership,
        target=targets.get(target),
    )
    # Faults made on this machine (the data directories' filesystem, the node clocks' files).
    on_this_machine = dict(lazy_disks=lazy_disks, clock_faults=clock_faults)
    if backend == "ssh":
        from harness.ssh_cluster import SshCluster
        from harness.ssh_hosts import load_hosts

        spec = load_hosts(hosts)
        cluster = SshCluster(root / "cluster", spec.nodes, **timeouts)
        stack.callback(cluster.close)
        if spec.toxiproxy_url is None:
            record_ports(ownership, cluster)
            return cluster, DirectLinks(cluster)
        server = ToxiproxyServer(spec.toxiproxy_url)
        wait_for_api(server)
        mesh = LinkMesh(server, cluster.ids, lambda node: "{}:{}".format(*cluster.raft[node]),
                        spec.listen_host, spec.route_host)  # fmt: skip
    elif backend == "docker":
        from harness.docker_cluster import DockerCluster

        cluster = DockerCluster(root / "cluster", run_id, nodes, **timeouts, **on_this_machine)
        stack.callback(cluster.close)
        # A target whose members all dial one advertised peer address (no
        # per-link routes) cannot go through the link proxies: its links are
        # cut with iptables (RunConfig refuses to cut them with --net proxy).
        if net == "iptables" or not timeouts["target"].capabilities.peer_routes:
            record_ports(ownership, cluster)
            return cluster, IptablesLinks(cluster)
        server = ToxiproxyServer(toxiproxy or cluster.start_toxiproxy())
        wait_for_api(server)
        mesh = LinkMesh(server, cluster.ids, lambda node: f"{node}:{cluster.raft[node][1]}", "0.0.0.0", "toxiproxy")
    else:
        from harness.local_cluster import LocalCluster

        if not timeouts["target"].capabilities.peer_routes:  # one front per node, links cut per pair
            cluster = LocalCluster(root / "cluster", nodes, **timeouts, **on_this_machine)
            stack.callback(cluster.close)
            if not reaper:  # the fronts live in this process; a cluster that outlives it (cluster up) goes without
                record_ports(ownership, cluster)
                return cluster, DirectLinks(cluster)
            links = AttributedLinks(cluster)
            stack.callback(links.remove)
            cluster.routes = {(src, dst): links.fronts[dst] for src, dst in links.links}
            cluster.advertised = dict(links.fronts)
            record_ports(ownership, cluster)
            ownership.ports([port for _, port in links.fronts.values()])
            return cluster, links
        if toxiproxy:
            server = ToxiproxyServer(toxiproxy)
        else:
            own = OwnToxiproxy(ownership=ownership).start(root / "toxiproxy.log")
            stack.callback(own.stop)
            server = ToxiproxyServer(own.url)
        cluster = LocalCluster(root / "cluster", nodes, **timeouts, **on_this_machine)
        stack.callback(cluster.close)
        mesh = LinkMesh(server, cluster.ids, lambda node: "{}:{}".format(*cluster.raft[node]))
    stack.callback(mesh.remove)
    cluster.routes = {link: mesh.route(link) for link in mesh.links}
    record_ports(ownership, cluster, server)
    return cluster, mesh


def record_ports(ownership: Ownership, cluster, server=None) -> None:
    """The loopback ports this run listens on or publishes, for whoever checks that none stays open."""
    addresses = [*cluster.client.values(), *cluster.raft.values(), *([(server.host, server.port)] if server else [])]
    ownership.ports([port for host, port in addresses if host in ("127.0.0.1", "localhost")])
