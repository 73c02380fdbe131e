"""What every cluster backend shares: node ids, the node command line, and
the queries the harness makes through each node's client port.

A backend adds the lifecycle: start, stop (SIGTERM), kill (SIGKILL), pause,
resume, wipe (lose the data directory), running, check_alive, collect, close.

Each node's data directory is formatted before its first start, with a
directory id the harness chooses: the first `initial_voters` nodes bootstrap
the voter set naming those ids (one of them alone: `--standalone`), the rest
start as observers. A wiped directory is never formatted again, so the node
comes back as an observer under a new directory id, as a replaced disk does.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import targets
from harness import faketime
from harness.lazyfs import CONTROL
from harness.ownership import Ownership, unmount
from history.errors import ClusterError, NoAgreedLeader, SettingError
from targets.interface import Address, NodeSpec, Target
from targets.options import settings

DEFAULT_TARGET = targets.DEFAULT
MOUNT_TIMEOUT_S = 10.0


def node_ids(nodes: int) -> tuple[str, ...]:
    """The names of a cluster's nodes: n1, n2, ..."""
    return tuple(f"n{i}" for i in range(1, nodes + 1))


class ClusterBase:
    """`routes[(src, dst)]` says where node src dials node dst: a link proxy
    when the mesh is in between, else the node itself (`raft[dst]`)."""

    def __init__(
        self,
        root: Path,
        nodes: int,
        options: dict | None,
        initial_voters: int | None = None,
        ownership: Ownership | None = None,
        target: Target | None = None,
        lazy_disks: bool = False,
        clock_faults: bool = False,
    ) -> None:
        self.root = Path(root)
        self.lazy_disks = lazy_disks
        self.clock_faults = clock_faults
        self.disks: dict[str, subprocess.Popen] = {}  # the lose-unfsynced filesystem's process per node
        self.target = target or targets.get(DEFAULT_TARGET)
        # What this cluster starts is recorded, so only it is ever cleaned up.
        self.ownership = ownership or Ownership(self.root, f"cluster-{os.urandom(4).hex()}")
        self.ids = node_ids(nodes)
        if initial_voters is not None and not 1 <= initial_voters <= nodes:
            raise SettingError("initial_voters", f"{initial_voters} is not between 1 and the {nodes} nodes")
        self.initial_voters = nodes if initial_voters is None else initial_voters
        self.directory_ids = {node: self.target.new_directory_id() for node in self.ids}
        self.formatted: set[str] = set()
        # The target's options as given (the declared defaults for the rest).
        self.node_args = self.target.node_args(settings(self.target.options, options or {}))
        self.routes: dict[tuple[str, str], tuple[str, int]] = {}
        # Where the others reach a node, where that is not where it listens
        # (a front that attributes its connections: harness/attributed_links.py).
        self.advertised: dict[str, tuple[str, int]] = {}
        # Nodes to start as joiners of a running cluster (added as members
        # first: `Capabilities.member_changes`): every member's raft address.
        self.joining: dict[str, dict[str, str]] = {}
        self.raft: dict[str, tuple[str, int]] = {}
        self.client: dict[str, Address] = {}
        self.stopped: set[str] = set()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        raise NotImplementedError

    def running(self, node: str) -> bool:
        raise NotImplementedError

    def exited(self) -> dict[str, str]:
        """The nodes that exited without anyone stopping them, each with how
        (its exit code and the last line it logged)."""
        raise NotImplementedError

    def check_alive(self) -> None:
        """Raise if a node exited that nobody stopped."""
        for node, how in self.exited().items():
            raise ClusterError(f"node {node} {how}")

    def data_dir(self, node: str) -> Path:
        """The node's data directory on this machine."""
        return self.root / node / "data"

    def node_files(self, node: str, part: str) -> Path:
        """`part` of the node's data directory as it is now, where this
        machine can read it (a backend whose nodes' files are elsewhere
        copies them here first)."""
        return self.data_dir(node) / part

    def raft_address(self, node: str) -> str:
        """Where the others reach the node, as HOST:PORT."""
        return ":".join(map(str, self.advertised.get(node, self.raft[node])))

    def peer_address(self, src: str, dst: str) -> tuple[str, int]:
        return self.routes.get((src, dst), self.raft[dst])

    def node_command(
        self,
        python: str,
        node: str,
        data_dir: str,
        raft_listen: str,
        client_listen: str,
        event_log: str | None = None,
        listen: dict[str, str] | None = None,
    ) -> list[str]:
        """The node's command line, by its target (`listen`: where its further listeners listen)."""
        peers = {peer: ":".join(map(str, self.peer_address(node, peer))) for peer in self.ids if peer != node}
        raft_host, _ = self.raft[node]
        client_port = client_listen.rpartition(":")[2]
        client_address = client_listen if not client_listen.startswith("0.0.0.0:") else f"{raft_host}:{client_port}"
        spec = NodeSpec(
            node,
            data_dir,
            str(event_log or self.event_log(node)),
            raft_listen,
            client_listen,
            peers,
            self.raft_address(node),
            client_address,
            self.joining.get(node),
            listen or {},
        )
        return self.target.command(python, spec, self.node_args)

    @property
    def voters(self) -> tuple[str, ...]:
        """The nodes that bootstrap the voter set; the others start as observers."""
        return self.ids[: self.initial_voters]

    @property
    def observers(self) -> tuple[str, ...]:
        return self.ids[self.initial_voters :]

    def prepare(self, node: str) -> None:
        """Format the node's data directory, once, before its first start."""
        if node in self.formatted:
            return
        bootstrap = tuple((v, self.directory_ids[v]) for v in self.voters) if node in self.voters else ()
        self.format(node, self.directory_ids[node], bootstrap)
        self.formatted.add(node)

    def format(self, node: str, directory_id: str, bootstrap: tuple) -> None:
        self.target.format(self.data_dir(node), directory_id, bootstrap)

    def wipe(self, node: str) -> None:
        """Lose what the node's data directory holds (it must be stopped): a
        disk loss. The directory itself stays, as it may be a mount point."""
        if self.running(node):
            raise ClusterError(f"wipe {node}: the node is running")
        data = self.data_dir(node)
        data.mkdir(parents=True, exist_ok=True)
        for entry in data.iterdir():
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()

    def mount_disk(self, node: str) -> None:
        """With `lazy_disks`, put the node's data directory on a mount of
        `harness/lazyfs.py` over `<node>/disk` (once), so `lose` can drop the
        writes a killed node never fsynced. The mount is in the run's ledger,
        and `unmount_disks` (or the reaper) unmounts it."""
        if not self.lazy_disks or node in self.disks:
            return
        backing, mount = self.root / node / "disk", self.data_dir(node)
        backing.mkdir(parents=True, exist_ok=True)
        mount.mkdir(parents=True, exist_ok=True)
        self.ownership.mount(mount)
        with open(self.root / node / "lazyfs.log", "ab") as output:
            process = subprocess.Popen(
                [sys.executable, "-m", "harness.lazyfs", "--backing", str(backing), "--mount", str(mount)],
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env=self.ownership.environment(),
            )
        self.ownership.process(process.pid)
        self.disks[node] = process
        deadline = time.monotonic() + MOUNT_TIMEOUT_S
        while not os.path.ismount(mount):
            if process.poll() is not None or time.monotonic() > deadline:
                raise ClusterError(
                    f"{node}: the lose-unfsynced filesystem did not mount; see {self.root / node / 'lazyfs.log'}"
                )
            time.sleep(0.02)

    def lose(self, node: str) -> None:
        """Drop every write the node has not fsynced (it must be down): a power loss."""
        if self.running(node):
            raise ClusterError(f"lose-unfsynced {node}: the node is running")
        self._disk_control(node, b"lose", "lose-unfsynced")

    def fill_disk(self, node: str, full: bool = True) -> None:
        """Make the node's disk full (a write that adds a byte fails with ENOSPC), or give it room again."""
        self._disk_control(node, b"full" if full else b"space", "disk-full")

    def _disk_control(self, node: str, command: bytes, fault: str) -> None:
        if node not in self.disks:
            raise ClusterError(f"{fault} {node}: its data directory is not on the lose-unfsynced filesystem")
        (self.data_dir(node) / CONTROL.lstrip("/")).write_bytes(command)

    def corrupt(self, node: str, rng, kind: str | None = None, mode: str | None = None) -> dict:
        """Damage one of the node's data files (it must be stopped), durably:
        of `kind`, or of a kind drawn among those the target names that have
        a file with data. A log loses 1 to 64 bytes off its end or has one
        bit flipped among its last 64 (a torn write); any other file is cut,
        or has a bit flipped, anywhere: as `mode` says (`truncate`, `flip`),
        else drawn. Returns what was damaged: the kind, the file, the mode
        and the byte offset."""
        if mode not in (None, "truncate", "flip"):
            raise ClusterError(f"corrupt {node}: mode {mode!r}: truncate or flip")
        if self.running(node):
            raise ClusterError(f"corrupt {node}: the node is running")
        found = {}
        for name, pattern in self.target.capabilities.data_files:
            files = sorted(p for p in self.data_dir(node).glob(pattern) if p.is_file() and p.stat().st_size)
            if files and kind in (None, name):
                found[name] = files
        if not found:
            raise ClusterError(f"corrupt {node}: no {kind or 'data'} file written yet")
        kind = rng.choice(sorted(found)) if len(found) > 1 else next(iter(found))
        path = found[kind][-1] if kind == "log" else rng.choice(found[kind])
        size = path.stat().st_size
        start = size - min(64, size) if kind == "log" else 0
        with open(path, "r+b") as damaged:
            drawn = rng.random() < 0.5
            truncate = drawn if mode is None else mode == "truncate"
            at = rng.randrange(start, size)
            if truncate:
                damaged.truncate(at)
                damage = {"mode": "truncate", "at": at, "bytes": size - at}
            else:
                damaged.seek(at)
                byte = damaged.read(1)[0] ^ (1 << rng.randrange(8))
                damaged.seek(at)
                damaged.write(bytes([byte]))
                damage = {"mode": "flip", "at": at, "bytes": 1}
            damaged.flush()
            os.fsync(damaged.fileno())
        return {"kind": kind, "file": str(path.relative_to(self.data_dir(node))), **damage}

    def unmount_disks(self) -> None:
        for node, process in self.disks.items():
            unmount(self.data_dir(node))
            try:
                process.wait(MOUNT_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self.disks.clear()

    def clock_control(self, node: str) -> Path:
        """The node's libfaketime control file (`--nemesis clock`), in its folder."""
        return self.root / node / "clock"

    def clock_environment(self, node: str, control: str) -> dict[str, str]:
        """With `clock_faults`, what puts the node's clock under its control
        file (`control`, as the node sees that path), set to true time until
        a fault moves it; else nothing."""
        if not self.clock_faults:
            return {}
        path = self.clock_control(node)
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            faketime.set_offset(path, 0)
        return faketime.environment(control)

    def set_clock(self, node: str, offset_ms: int) -> None:
        """Move the node's clock to `offset_ms` from true time (it reads the file at every clock call)."""
        if not self.clock_faults:
            raise ClusterError(f"clock {node}: this cluster's clocks are not under libfaketime")
        faketime.set_offset(self.clock_control(node), offset_ms)

    def event_log(self, node: str) -> Path:
        return self.root / node / "events.jsonl"

    def local_pids(self) -> dict[str, int]:
        """The process id of each node running as a process of this machine
        (a soak samples their memory); none where nodes run elsewhere."""
        return {}

    def live_log(self, node: str) -> Path | None:
        """The node's own log (its target's `log_file`) as it is being
        written, where this machine reads it: a local process's, a
        container's bind-mounted event log; None where it is elsewhere (a
        container's output, an SSH host's files) until `collect`."""
        path = self.root / node / self.target.log_file
        return path if path.exists() else None

    # ------------------------------------------------------------------ queries

    def status(self, node: str, timeout_s: float = 0.5) -> dict | None:
        """The node's status by its target (named by the harness where the node cannot say)."""
        status = self.target.status(self.client[node], timeout_s)
        if status is not None and status.get("node") is None:
            status["node"] = node
        return status

    def wait_for_leader(self, timeout_s: float = 10.0, exclude: tuple[str, ...] = ()) -> str:
        """The leader that every running node (but `exclude`) agrees on."""
        deadline = time.monotonic() + timeout_s
        views: dict[str, dict | None] = {}
        while time.monotonic() < deadline:
            self.check_alive()
            views = {node: self.status(node) for node in self.ids if node not in exclude and self.running(node)}
            statuses = list(views.values())
            leaders = {s["leader"] for s in statuses if s is not None}
            if len(leaders) == 1 and None not in leaders and all(statuses):
                leader = leaders.pop()
                if leader not in exclude and any(s is not None and s["state"] == "leader" for s in statuses):
                    return leader
            time.sleep(0.05)
        # What each node said last, so that a cluster that never agreed says why (a node no answer, or another leader).
        said = ", ".join(
            f"{node}: {'no answer' if view is None else view.get('leader') or 'no leader'}"
            for node, view in views.items()
        )
        raise NoAgreedLeader(f"no agreed leader within {timeout_s} s (the leader each names: {said or 'none running'})")
