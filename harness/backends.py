"""Bringing up a cluster of any backend together with its link applier: the
one place `splitbrain run`, `splitbrain cluster up` and the tests get both from.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path

import targets
from harness.attributed_links import AttributedLinks
from harness.cluster import DEFAULT_TARGET
from harness.iptables_links import DirectLinks, IptablesLinks
from harness.links import OwnToxiproxy, ToxiproxyServer, wait_for_api
from harness.mesh import LinkMesh
from harness.ownership import Ownership
from history.errors import SettingError, UsageError


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
    framed: bool = False,
):
    """(cluster, links), not started; `stack` tears down everything made here
    (`stack.pop_all()` keeps it). `links` is a LinkMesh when links go through
    proxies, and the cluster's nodes are routed through it.

    Everything made is recorded in `root/owned.jsonl`; with `reaper`, a
    watchdog removes it should this process die before `stack` unwinds
    (`splitbrain cluster up` goes without: its cluster outlives the command).
    `lazy_disks`: data directories on the lose-unfsynced filesystem;
    `clock_faults`: node clocks under libfaketime (both local and Docker backends);
    `framed`: the link proxies we start cut the target's traffic into
    messages (`Capabilities.framing`), for message faults."""
    if backend not in BACKENDS:
        raise UsageError(f"--backend: {backend!r} is not one of {', '.join(BACKENDS)}")
    # Absolute: Docker binds only absolute host folders, and a results folder is often relative (runs/).
    root = Path(root).absolute()
    ownership = Ownership(root, run_id)
    if reaper:
        stack.callback(ownership.watch().release)
    made = Made(
        stack,
        root,
        run_id,
        ownership,
        reaper,
        nodes,
        net,
        toxiproxy,
        hosts,
        dict(options=options, initial_voters=initial_voters, ownership=ownership, target=targets.get(target)),
        dict(lazy_disks=lazy_disks, clock_faults=clock_faults),
        targets.get(target).capabilities.framing if framed else "",
    )
    return BACKENDS[backend](made)


@dataclass(frozen=True)
class Made:
    """What bringing up a backend needs: where, how many, and how its links go.
    `common` are every cluster's arguments; `on_this_machine` the faults made on
    the harness machine (the data directories' filesystem, the nodes' clocks)."""

    stack: contextlib.ExitStack
    root: Path
    run_id: str
    ownership: Ownership
    reaper: bool
    nodes: int
    net: str
    toxiproxy: str | None
    hosts: Path | None
    common: dict
    on_this_machine: dict
    # The framing the link proxies cut the traffic by ("": none).
    framing: str = ""


def _ssh(made: Made):
    """SSH hosts: links through the hosts file's Toxiproxy, else not cut at all."""
    from harness.ssh_cluster import SshCluster
    from harness.ssh_hosts import load_hosts

    if made.hosts is None:
        raise SettingError("hosts", "the SSH backend needs a hosts file")
    spec = load_hosts(made.hosts)
    cluster = SshCluster(made.root / "cluster", spec.nodes, **made.common)
    made.stack.callback(cluster.close)
    if spec.toxiproxy_url is None:
        record_ports(made.ownership, cluster)
        return cluster, DirectLinks(cluster)
    server = ToxiproxyServer(spec.toxiproxy_url)
    wait_for_api(server)
    mesh = LinkMesh(
        server, cluster.ids, lambda node: "{}:{}".format(*cluster.raft[node]), spec.listen_host, spec.route_host
    )
    return cluster, _routed(made, cluster, mesh, server)


def _docker(made: Made):
    """Containers. A target whose members all dial one advertised peer
    address (no per-link routes) cannot go through the link proxies: its
    links are cut with iptables (RunConfig refuses to cut them with --net proxy)."""
    from harness.docker_cluster import DockerCluster

    cluster = DockerCluster(made.root / "cluster", made.run_id, made.nodes, **made.common, **made.on_this_machine)
    made.stack.callback(cluster.close)
    if made.net == "iptables" or not made.common["target"].capabilities.peer_routes:
        record_ports(made.ownership, cluster)
        return cluster, IptablesLinks(cluster)
    server = ToxiproxyServer(made.toxiproxy or cluster.start_toxiproxy())
    wait_for_api(server)
    mesh = LinkMesh(
        server, cluster.ids, lambda node: f"{node}:{cluster.raft[node][1]}", "0.0.0.0", "toxiproxy", made.framing
    )
    return cluster, _routed(made, cluster, mesh, server)


def _local(made: Made):
    """Processes on 127.0.0.1: links through our Toxiproxy (or the one
    given), or, for a target without per-link routes, through one front per
    node that names each connection's source, so links are cut per pair."""
    from harness.local_cluster import LocalCluster

    if not made.common["target"].capabilities.peer_routes:
        cluster = LocalCluster(made.root / "cluster", made.nodes, **made.common, **made.on_this_machine)
        made.stack.callback(cluster.close)
        if not made.reaper:  # the fronts live in this process; a cluster that outlives it (cluster up) goes without
            record_ports(made.ownership, cluster)
            return cluster, DirectLinks(cluster)
        links = AttributedLinks(cluster, made.framing)
        made.stack.callback(links.remove)
        cluster.routes = {(src, dst): links.fronts[dst] for src, dst in links.links}
        cluster.advertised = dict(links.fronts)
        record_ports(made.ownership, cluster)
        made.ownership.ports([port for _, port in links.fronts.values()])
        return cluster, links
    if made.toxiproxy:
        server = ToxiproxyServer(made.toxiproxy)
    else:
        own = OwnToxiproxy(ownership=made.ownership).start(made.root / "toxiproxy.log")
        made.stack.callback(own.stop)
        server = ToxiproxyServer(own.url)
    cluster = LocalCluster(made.root / "cluster", made.nodes, **made.common, **made.on_this_machine)
    made.stack.callback(cluster.close)
    mesh = LinkMesh(server, cluster.ids, lambda node: "{}:{}".format(*cluster.raft[node]), framing=made.framing)
    return cluster, _routed(made, cluster, mesh, server)


def _routed(made: Made, cluster, mesh: LinkMesh, server: ToxiproxyServer) -> LinkMesh:
    """The cluster's nodes routed through the mesh's proxies, removed on the way out."""
    made.stack.callback(mesh.remove)
    cluster.routes = {link: mesh.route(link) for link in mesh.links}
    record_ports(made.ownership, cluster, server)
    return mesh


# Each backend `--backend` names: how its cluster and link applier are made.
BACKENDS = {"local": _local, "docker": _docker, "ssh": _ssh}


def record_ports(ownership: Ownership, cluster, server=None) -> None:
    """The loopback ports this run listens on or publishes, for whoever checks that none stays open."""
    addresses = [*cluster.client.values(), *cluster.raft.values(), *([(server.host, server.port)] if server else [])]
    ownership.ports([port for host, port in addresses if host in ("127.0.0.1", "localhost")])
