"""The Docker backend: each node a container of the locally built node image
on a network the run creates, the project source mounted read-only, node data
in a per-node host directory (kept across restarts, lost by `wipe`). The
harness reaches nodes only through client ports published on 127.0.0.1.

Everything created carries the labels `splitbrain.run=<run id>` and
`splitbrain.owner=<owner id>` and is recorded in the run's ledger
(`harness/ownership.py`), which is how the reaper and `splitbrain cluster
down` find what this run, and no other, left behind.
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path
from typing import Any

import docker
from docker.errors import APIError, NotFound

from harness.cluster import ClusterBase
from harness.docker_image import ROOT, ensure_image
from harness.ownership import Ownership
from harness.ports import free_port
from history.errors import ClusterError
from targets.interface import Address, Target

SOURCE_MOUNT = "/opt/splitbrain"
RAFT_PORT = 9000
CLIENT_PORT = 9100
TOXIPROXY_PORT = 8474
# A target's further listeners (Target.listeners) take the ports from here on in the container.
LISTENER_PORT = 9200
STOP_TIMEOUT_S = 5
# Host ports tried for one container before its start fails.
PORT_ATTEMPTS = 5


def name_prefix(owner: str) -> str:
    """Container and network names, unique per owner (two campaigns may use
    the same run ids). Docker allows [a-zA-Z0-9_.-] in names and a run id may
    hold more (a campaign's nemesis set "pause+kill"); the labels, which the
    clean-up goes by, keep the owner as it is."""
    return "splitbrain-" + re.sub(r"[^a-zA-Z0-9_.-]", "-", owner)


class DockerCluster(ClusterBase):
    def __init__(
        self,
        root: Path,
        run_id: str,
        nodes: int = 3,
        options: dict | None = None,
        initial_voters: int | None = None,
        ownership: Ownership | None = None,
        target: Target | None = None,
        lazy_disks: bool = False,
        clock_faults: bool = False,
    ) -> None:
        super().__init__(
            root, nodes, options, initial_voters, ownership or Ownership(root, run_id), target, lazy_disks, clock_faults
        )
        self.image = ensure_image()
        self.docker = docker.from_env()
        self.run_id = run_id
        self.labels = self.ownership.labels
        self.prefix = name_prefix(self.ownership.owner)
        self.ownership.docker()
        self.network = self.docker.networks.create(self.prefix, driver="bridge", labels=self.labels)
        self.ownership.network(self.network)
        self.raft = {node: (node, RAFT_PORT) for node in self.ids}
        self.client = {
            node: self._address({CLIENT_PORT: free_port(), **{port: free_port() for port in self.listener_ports}})
            for node in self.ids
        }
        self.containers: dict[str, Any] = {}  # docker's Container, untyped
        self.earlier_logs: dict[str, bytes] = {}  # output of containers a node had before its current one

    def _create(
        self, name: str, alias: str, command: list[str], ports: dict, volumes: dict, environment: dict | None = None
    ):
        container = self.docker.containers.create(
            self.image,
            command,
            name=f"{self.prefix}-{name}",
            hostname=alias,
            labels=self.labels,
            environment={"PYTHONPATH": SOURCE_MOUNT, "PYTHONUNBUFFERED": "1", **(environment or {})},
            working_dir=SOURCE_MOUNT,
            volumes={str(ROOT): {"bind": SOURCE_MOUNT, "mode": "ro"}, **volumes},
            ports=ports,
            cap_add=["NET_ADMIN"],
            network=self.network.name,
            networking_config={self.network.name: self.docker.api.create_endpoint_config(aliases=[alias])},
        )
        self.ownership.container(container)
        return container

    @property
    def listener_ports(self) -> dict[int, str]:
        """The container port of each further listener the target declares."""
        return {LISTENER_PORT + i: name for i, name in enumerate(self.target.listeners)}

    def _address(self, published: dict[int, int]) -> Address:
        """A node's address from its published host ports (by container port)."""
        listeners = {name: ("127.0.0.1", published[port]) for port, name in self.listener_ports.items()}
        return Address("127.0.0.1", published[CLIENT_PORT], listeners)

    def _started(self, make, published: dict[int, int]):
        """A container made by `make(published)` (host port by container
        port) and started; host ports taken between their choice and
        Docker's bind (another process of ours chose one meanwhile) are
        chosen again: returns the container and the ports it has."""
        for attempt in itertools.count(1):
            container = make(published)
            try:
                container.start()
                return container, published
            except APIError as error:
                if not port_taken(error) or attempt == PORT_ATTEMPTS:
                    raise
                container.remove(force=True)
                published = {inside: free_port() for inside in published}
                self.ownership.ports(list(published.values()))

    def start_toxiproxy(self) -> str:
        """Run splitbrain's link proxy server in its own container on the
        run's network; returns its API URL on 127.0.0.1."""
        command = ["python3", "-m", "harness.toxiproxy", f"--listen=0.0.0.0:{TOXIPROXY_PORT}"]
        container, published = self._started(
            lambda ports: self._create("toxiproxy", "toxiproxy", command, _bindings(ports), {}),
            {TOXIPROXY_PORT: free_port()},
        )
        self.containers["toxiproxy"] = container
        return f"http://127.0.0.1:{published[TOXIPROXY_PORT]}"

    # ------------------------------------------------------------------ lifecycle

    def start(self, node: str) -> None:
        """Start the node's container, made on its first start; a node whose
        command line has changed since (a member added back, which joins the
        cluster as it is now) gets a new container, its earlier one's output kept."""
        container = self.containers.get(node)
        listen = {name: f"0.0.0.0:{port}" for port, name in self.listener_ports.items()}
        command = self.node_command(
            "python3",
            node,
            "/node/data",
            f"0.0.0.0:{RAFT_PORT}",
            f"0.0.0.0:{CLIENT_PORT}",
            "/node/events.jsonl",
            listen,
        )
        if container is not None and container.attrs["Config"]["Cmd"] != command:
            self.earlier_logs[node] = self.earlier_logs.get(node, b"") + container.logs()
            container.remove(force=True)
            container = None
        if container is None:
            data = self.data_dir(node)
            self.mount_disk(node)  # on this machine, before the container binds the node's folder (with its mounts)
            self.prepare(node)
            volumes = {str(data.parent): {"bind": "/node", "mode": "rw"}, **self.server_volume()}
            # The node's folder is /node in its container: so is its clock's control file.
            environment = self.clock_environment(node, f"/node/{self.clock_control(node).name}")
            self.stopped.discard(node)
            published = {
                CLIENT_PORT: self.client[node][1],
                **{port: self.client[node].listeners[name][1] for port, name in self.listener_ports.items()},
            }
            container, published = self._started(
                lambda ports: self._create(node, node, command, _bindings(ports), volumes, environment), published
            )
            self.client[node] = self._address(published)
            self.containers[node] = container
        elif not self.running(node):
            self.stopped.discard(node)
            container.start()

    def server_volume(self) -> dict:
        """The folder of the target's chosen server (a release's, a user's
        build), at the same path in the container, read-only: the node's
        command line names the file by that path. None chosen: the image's own."""
        folder = self.target.server_file.parent if self.target.server_file is not None else None
        return {} if folder is None else {str(folder): {"bind": str(folder), "mode": "ro"}}

    def start_all(self) -> None:
        for node in self.ids:
            self.start(node)

    def _state(self, node: str) -> dict:
        container = self.containers.get(node)
        if container is None:
            return {}
        container.reload()
        return container.attrs["State"]

    def running(self, node: str) -> bool:
        return bool(self._state(node).get("Running"))

    def kill(self, node: str) -> None:
        if self.running(node):
            self._unpause(node)
            try:
                self.containers[node].kill()
            except APIError as error:  # it exited by itself meanwhile (a removed etcd member does)
                if error.status_code != 409 or self.running(node):
                    raise
            self.containers[node].wait(timeout=STOP_TIMEOUT_S)
        self.stopped.add(node)

    def stop(self, node: str) -> None:
        if self.running(node):
            self._unpause(node)
            self.containers[node].stop(timeout=STOP_TIMEOUT_S)
        self.stopped.add(node)

    def pause(self, node: str) -> None:
        if self.running(node) and not self._state(node).get("Paused"):
            self.containers[node].pause()

    def resume(self, node: str) -> None:
        self._unpause(node)

    def _unpause(self, node: str) -> None:
        if self._state(node).get("Paused"):
            self.containers[node].unpause()

    def ip(self, node: str) -> str:
        container = self.containers[node]
        container.reload()
        return container.attrs["NetworkSettings"]["Networks"][self.network.name]["IPAddress"]

    def exec(self, node: str, command: list[str]) -> str:
        result = self.containers[node].exec_run(command)
        if result.exit_code != 0:
            raise ClusterError(f"{node}: {' '.join(command)}: {result.output.decode(errors='replace').strip()}")
        return result.output.decode(errors="replace")

    def exited(self) -> dict[str, str]:
        found = {}
        for node in self.ids:
            state = self._state(node)
            if state and node not in self.stopped and not state.get("Running"):
                lines = self.containers[node].logs(tail=1).decode(errors="replace").strip()
                found[node] = f"exited with code {state.get('ExitCode')}: {lines or '(no output)'}"
        return found

    def collect(self, dest: Path) -> None:
        for node in self.ids:
            target = Path(dest) / node
            target.mkdir(parents=True, exist_ok=True)
            container = self.containers.get(node)
            if container is not None:
                (target / "node.log").write_bytes(self.earlier_logs.get(node, b"") + container.logs())
            if self.event_log(node).exists():
                (target / "events.jsonl").write_bytes(self.event_log(node).read_bytes())

    def close(self) -> None:
        for container in self.containers.values():
            try:
                container.remove(force=True)
            except NotFound:
                pass
        self.containers.clear()
        self.unmount_disks()
        try:
            self.network.remove()
        except NotFound:
            pass


def port_taken(error: Exception) -> bool:
    """Whether Docker refused a start because a host port was taken: by a
    process ("address already in use") or by another container ("port is
    already allocated"; a CI run failed so, a campaign's runs on Spark
    beside other runs of ours)."""
    return any(words in str(error) for words in ("address already in use", "port is already allocated"))


def _bindings(published: dict[int, int]) -> dict:
    """Docker's port bindings: each container port published on 127.0.0.1 at its host port."""
    return {f"{inside}/tcp": ("127.0.0.1", port) for inside, port in published.items()}
