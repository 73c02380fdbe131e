"""A cluster of reference-quorum node processes on 127.0.0.1 (the local backend).

Each node is its target's process (for the reference quorum, `python -m
targets.kraft.node`) in its own session (so a Ctrl-C
meant for the harness reaches only the harness, which then stops the nodes
itself); pause is SIGSTOP, kill is SIGKILL. `close()` kills every node it
started; use it as a context manager.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

from harness.cluster import ClusterBase
from harness.ownership import Ownership
from harness.ports import free_port, hold
from targets.interface import Address, Target

STOP_TIMEOUT_S = 5.0


class LocalCluster(ClusterBase):
    def __init__(
        self,
        root: Path,
        nodes: int = 3,
        options: dict | None = None,
        initial_voters: int | None = None,
        ownership: Ownership | None = None,
        target: Target | None = None,
        lazy_disks: bool = False,
        clock_faults: bool = False,
    ) -> None:
        super().__init__(root, nodes, options, initial_voters, ownership, target, lazy_disks, clock_faults)
        self.raft = {node: ("127.0.0.1", free_port()) for node in self.ids}
        listeners = {node: {name: ("127.0.0.1", free_port()) for name in self.target.listeners} for node in self.ids}
        self.client = {node: Address("127.0.0.1", free_port(), listeners[node]) for node in self.ids}
        self.processes: dict[str, subprocess.Popen] = {}
        # Each node's ports, held from their choice until the cluster closes
        # (harness/ports.py): the node listens beside the hold.
        self.holds = {node: self._hold(node) for node in self.ids}

    def local_pids(self) -> dict[str, int]:
        return {node: process.pid for node, process in self.processes.items() if process.poll() is None}

    def command(self, node: str) -> list[str]:
        raft = "{}:{}".format(*self.raft[node])
        client = "{}:{}".format(*self.client[node])
        listen = {name: "{}:{}".format(*address) for name, address in self.client[node].listeners.items()}
        return self.node_command(sys.executable, node, str(self.data_dir(node)), raft, client, listen=listen)

    # ------------------------------------------------------------------ lifecycle

    def start(self, node: str) -> None:
        if self.running(node):
            return
        log_dir = self.root / node
        log_dir.mkdir(parents=True, exist_ok=True)
        self.stopped.discard(node)
        self.mount_disk(node)
        self.prepare(node)
        with open(log_dir / "node.log", "ab") as output:
            self.processes[node] = subprocess.Popen(
                self.command(node),
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env={**self.ownership.environment(), **self.clock_environment(node, str(self.clock_control(node)))},
            )
        self.ownership.process(self.processes[node].pid)

    def start_all(self) -> None:
        for node in self.ids:
            self.start(node)

    def running(self, node: str) -> bool:
        process = self.processes.get(node)
        return process is not None and process.poll() is None

    def kill(self, node: str) -> None:
        """SIGKILL: the process dies with whatever it had not made durable."""
        self._signal(node, signal.SIGKILL)
        self._reap(node)

    def stop(self, node: str) -> None:
        """SIGTERM: a leader resigns first (EndQuorumEpoch), then the process exits."""
        self._signal(node, signal.SIGTERM)
        self._reap(node)

    def pause(self, node: str) -> None:
        self._signal(node, signal.SIGSTOP)

    def resume(self, node: str) -> None:
        self._signal(node, signal.SIGCONT)

    def collect(self, dest: Path) -> None:
        """Copy each node's process log and event log to `dest/<node>/`."""
        for node in self.ids:
            target = Path(dest) / node
            target.mkdir(parents=True, exist_ok=True)
            for source in (self.root / node / "node.log", self.event_log(node)):
                if source.exists():
                    shutil.copy(source, target / source.name)

    def close(self) -> None:
        for node in list(self.processes):
            self.kill(node)
        for node in self.ids:
            self._let_go(node)
        self.unmount_disks()

    def exited(self) -> dict[str, str]:
        found = {}
        for node, process in self.processes.items():
            if node not in self.stopped and process.poll() is not None:
                lines = (self.root / node / "node.log").read_text(errors="replace").strip().splitlines()
                found[node] = f"exited with code {process.returncode}: {lines[-1] if lines else '(no output)'}"
        return found

    def _signal(self, node: str, sig: int) -> None:
        if self.running(node):
            os.kill(self.processes[node].pid, sig)

    def _reap(self, node: str) -> None:
        process = self.processes.get(node)
        if process is None:
            return
        self.stopped.add(node)
        try:
            process.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.kill(process.pid, signal.SIGCONT)
            process.kill()
            process.wait()

    def _hold(self, node: str) -> list[socket.socket]:
        """`node`'s ports held (those nothing else holds already)."""
        ports = [self.raft[node][1], self.client[node][1], *(port for _, port in self.client[node].listeners.values())]
        return [sock for sock in map(hold, ports) if sock is not None]

    def _let_go(self, node: str) -> None:
        for sock in self.holds.pop(node, []):
            sock.close()
