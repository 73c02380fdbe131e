"""A cluster of reference-quorum node processes on 127.0.0.1 (the local backend).

Each node is `python -m targets.kraft.node` in its own session (so a Ctrl-C
meant for the harness reaches only the harness, which then stops the nodes
itself). `close()` kills every node it started; use it as a context manager.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from harness.ports import free_port
from targets.kraft.client import call

STOP_TIMEOUT_S = 5.0


class LocalCluster:
    """`peer_address(src, dst)` says where node src dials node dst: the node
    itself by default, a link proxy when the harness puts one in between."""

    def __init__(
        self,
        root: Path,
        nodes: int = 3,
        node_args: tuple[str, ...] = (),
        election_timeout_ms: int = 300,
        fetch_timeout_ms: int = 600,
    ) -> None:
        self.root = Path(root)
        self.ids = tuple(f"n{i}" for i in range(1, nodes + 1))
        self.raft = {node: ("127.0.0.1", free_port()) for node in self.ids}
        self.client = {node: ("127.0.0.1", free_port()) for node in self.ids}
        self.node_args = (
            "--election-timeout-ms",
            str(election_timeout_ms),
            "--fetch-timeout-ms",
            str(fetch_timeout_ms),
            *node_args,
        )
        self.routes: dict[tuple[str, str], tuple[str, int]] = {}
        self.processes: dict[str, subprocess.Popen] = {}
        self.stopped: set[str] = set()

    def __enter__(self) -> "LocalCluster":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def data_dir(self, node: str) -> Path:
        return self.root / node / "data"

    def peer_address(self, src: str, dst: str) -> tuple[str, int]:
        return self.routes.get((src, dst), self.raft[dst])

    def command(self, node: str) -> list[str]:
        peers = [f"--peer={peer}={':'.join(map(str, self.peer_address(node, peer)))}" for peer in self.ids if peer != node]
        return [
            sys.executable,
            "-m",
            "targets.kraft.node",
            "--id",
            node,
            "--data-dir",
            str(self.data_dir(node)),
            "--raft-listen",
            "{}:{}".format(*self.raft[node]),
            "--client-listen",
            "{}:{}".format(*self.client[node]),
            *peers,
            *self.node_args,
        ]

    # ------------------------------------------------------------------ lifecycle

    def start(self, node: str) -> None:
        if self.running(node):
            return
        log_dir = self.root / node
        log_dir.mkdir(parents=True, exist_ok=True)
        self.stopped.discard(node)
        with open(log_dir / "node.log", "ab") as output:
            self.processes[node] = subprocess.Popen(
                self.command(node),
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

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

    def wipe(self, node: str) -> None:
        """Lose the node's data directory (it must be stopped): a disk loss."""
        if self.running(node):
            raise RuntimeError(f"wipe {node}: the node is running")
        shutil.rmtree(self.data_dir(node), ignore_errors=True)

    def event_log(self, node: str) -> Path:
        return self.data_dir(node) / "events.jsonl"

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

    def check_alive(self) -> None:
        """Raise if a node exited that nobody stopped, with the last line it logged."""
        for node, process in self.processes.items():
            if node not in self.stopped and process.poll() is not None:
                lines = (self.root / node / "node.log").read_text(errors="replace").strip().splitlines()
                last = lines[-1] if lines else "(no output)"
                raise RuntimeError(f"node {node} exited with code {process.returncode}: {last}")

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

    # ------------------------------------------------------------------ queries

    def status(self, node: str, timeout_s: float = 0.5) -> dict | None:
        try:
            return call(self.client[node], "status", timeout_s)
        except (OSError, ValueError):
            return None

    def wait_for_leader(self, timeout_s: float = 10.0, exclude: tuple[str, ...] = ()) -> str:
        """The leader that every running node (but `exclude`) agrees on."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            self.check_alive()
            statuses = [self.status(node) for node in self.ids if node not in exclude and self.running(node)]
            leaders = {s["leader"] for s in statuses if s is not None}
            if len(leaders) == 1 and None not in leaders and all(statuses):
                leader = leaders.pop()
                if leader not in exclude and any(s["state"] == "leader" for s in statuses):
                    return leader
            time.sleep(0.05)
        raise TimeoutError(f"no agreed leader within {timeout_s} s")
