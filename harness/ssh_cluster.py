"""The SSH backend: nodes on hosts reached with paramiko, key authentication
and host-key checking on (a host whose key is not the one in known_hosts is
refused). The node code (`targets/`, standard library only) is copied over
SFTP; nodes run under nohup and are signalled by pid like local processes.
"""

from __future__ import annotations

import copy
import shlex
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path

import paramiko

from harness.cluster import ClusterBase
from harness.docker_image import ROOT
from harness.ownership import Ownership
from history.errors import ClusterError
from targets.interface import Address, Target
from targets.releases import sha256_of

REMOTE_DIR = "splitbrain"  # under the remote user's home
SERVER_DIR = "server"  # in REMOTE_DIR: a chosen server's file, by its sha256 (runs of two builds may share a host)
COMMAND_TIMEOUT_S = 20.0


class SshError(ClusterError):
    """An SSH host could not be reached or trusted, or a command failed there."""


@dataclass(frozen=True)
class SshHost:
    host: str
    port: int
    user: str
    key_file: Path
    known_hosts: Path

    def __str__(self) -> str:
        return f"{self.user}@{self.host}:{self.port}"


class SshConnection:
    def __init__(self, target: SshHost, timeout_s: float = 10.0) -> None:
        self.target = target
        self.client = paramiko.SSHClient()
        try:
            self.client.load_host_keys(str(target.known_hosts))
        except OSError as error:
            raise SshError(f"{target}: cannot read known_hosts {target.known_hosts}: {error}") from None
        self.client.set_missing_host_key_policy(paramiko.RejectPolicy())
        try:
            self.client.connect(
                target.host,
                target.port,
                username=target.user,
                key_filename=str(target.key_file),
                timeout=timeout_s,
                banner_timeout=timeout_s,
                auth_timeout=timeout_s,
                allow_agent=False,
                look_for_keys=False,
            )
        except paramiko.BadHostKeyException as error:
            raise SshError(
                f"{target}: host key mismatch: the server offers a {error.key.get_name()} key"
                f" {error.key.fingerprint} that differs from {target.known_hosts}; refusing to connect"
            ) from None
        except paramiko.SSHException as error:
            raise SshError(f"{target}: {error}") from None
        except (TimeoutError, OSError) as error:
            raise SshError(f"{target}: cannot connect: {error}") from None

    def run(self, command: str, timeout_s: float = COMMAND_TIMEOUT_S) -> str:
        _, stdout, stderr = self.client.exec_command(command, timeout=timeout_s)
        out = stdout.read().decode(errors="replace")
        code = stdout.channel.recv_exit_status()
        if code != 0:
            raise SshError(
                f"{self.target}: `{command}` exited {code}: {stderr.read().decode(errors='replace').strip()}"
            )
        return out

    def put_tree(self, local: Path, remote: str, pattern: str = "*.py") -> int:
        """Copy the files matching `pattern` under `local` to `remote`."""
        sftp = self.client.open_sftp()
        copied = 0
        try:
            for path in sorted(local.rglob(pattern)):
                target = f"{remote}/{path.relative_to(local.parent).as_posix()}"
                self.run(f"mkdir -p {shlex.quote(target.rsplit('/', 1)[0])}")
                sftp.put(str(path), target)
                copied += 1
        finally:
            sftp.close()
        return copied

    def put_file(self, local: Path, remote: str, mode: int = 0o755) -> None:
        """Copy one file to `remote` (its folder made), with `mode`."""
        self.run(f"mkdir -p {shlex.quote(remote.rsplit('/', 1)[0])}")
        sftp = self.client.open_sftp()
        try:
            sftp.put(str(local), remote)
            sftp.chmod(remote, mode)
        finally:
            sftp.close()

    def get_tree(self, remote: str, local: Path) -> None:
        """Copy every file under `remote` to `local`, folders as they are; a
        `remote` that does not exist copies nothing."""
        sftp = self.client.open_sftp()
        try:
            folders = [(remote, local)]
            while folders:
                here, there = folders.pop()
                try:
                    entries = sftp.listdir_attr(here)
                except FileNotFoundError:
                    continue
                there.mkdir(parents=True, exist_ok=True)
                for entry in entries:
                    path = f"{here}/{entry.filename}"
                    if stat.S_ISDIR(entry.st_mode or 0):
                        folders.append((path, there / entry.filename))
                    else:
                        sftp.get(path, str(there / entry.filename))
        finally:
            sftp.close()

    def read(self, remote: str) -> bytes:
        sftp = self.client.open_sftp()
        try:
            with sftp.open(remote, "rb") as f:
                return f.read()
        except OSError:
            return b""
        finally:
            sftp.close()

    def close(self) -> None:
        self.client.close()


@dataclass(frozen=True)
class SshNode:
    """Where a node runs (`ssh`); where its peers reach its raft port
    (`raft`, also the port it listens on); the port its client API listens
    on there (`client_port`) and where the harness reaches it (`client`)."""

    ssh: SshHost
    raft: tuple[str, int]
    client_port: int
    client: tuple[str, int]


class SshCluster(ClusterBase):
    def __init__(
        self,
        root: Path,
        nodes: dict[str, SshNode],
        options: dict | None = None,
        initial_voters: int | None = None,
        ownership: Ownership | None = None,
        target: Target | None = None,
    ) -> None:
        super().__init__(root, len(nodes), options, initial_voters, ownership, target)
        self.ids = tuple(nodes)
        self.specs = nodes
        self.raft = {node: spec.raft for node, spec in nodes.items()}
        # A target's further listeners take the ports after the client port.
        self.listen = {
            node: {name: spec.client_port + 1 + i for i, name in enumerate(self.target.listeners)}
            for node, spec in nodes.items()
        }
        self.client = {
            node: Address(*spec.client, {name: (spec.client[0], port) for name, port in self.listen[node].items()})
            for node, spec in nodes.items()
        }
        self.connections = {node: SshConnection(spec.ssh) for node, spec in nodes.items()}
        self.pids: dict[str, int] = {}
        self.base: dict[str, str] = {}
        for node, connection in self.connections.items():
            self.base[node] = connection.run("echo $HOME").strip() + "/" + REMOTE_DIR
            connection.run(f"mkdir -p {shlex.quote(self.base[node])}/{node}")
            for source in self.target.ssh_sources:
                connection.put_tree(ROOT / source, self.base[node])
        if self.target.server_file is not None:
            self.target = self._server_on_hosts(self.target)

    def _server_on_hosts(self, target: Target) -> Target:
        """The chosen server (a release's, a build of the user's) copied to
        each host, beside the nodes' folders; the node's command names it
        from there (a path relative to the folder it starts in, as each host's
        home may differ)."""
        assert target.server_file is not None
        relative = f"{SERVER_DIR}/{sha256_of(target.server_file)[:16]}/{target.server_file.name}"
        for node, connection in self.connections.items():
            connection.put_file(target.server_file, f"{self.base[node]}/{relative}")
        on_hosts = copy.copy(target)
        on_hosts.server_file = Path(".") / relative
        return on_hosts

    def _remote(self, node: str, path: str) -> str:
        return f"{self.base[node]}/{node}/{path}"

    def start(self, node: str) -> None:
        if self.running(node):
            return
        self.stopped.discard(node)
        self.prepare(node)
        raft = f"0.0.0.0:{self.raft[node][1]}"
        client = f"0.0.0.0:{self.specs[node].client_port}"
        listen = {name: f"0.0.0.0:{port}" for name, port in self.listen[node].items()}
        command = self.node_command(
            "python3", node, self._remote(node, "data"), raft, client, self._remote(node, "events.jsonl"), listen
        )
        line = " ".join(shlex.quote(word) for word in command)
        log = shlex.quote(self._remote(node, "node.log"))
        script = f"cd {shlex.quote(self.base[node])} || exit 1; nohup {line} >> {log} 2>&1 < /dev/null & echo $!"
        self.pids[node] = int(self.connections[node].run(script).strip())

    def start_all(self) -> None:
        for node in self.ids:
            self.start(node)

    def _signal(self, node: str, sig: str) -> None:
        if node in self.pids:
            self.connections[node].run(f"kill -{sig} {self.pids[node]} 2>/dev/null || true")

    def running(self, node: str) -> bool:
        if node not in self.pids:
            return False
        out = self.connections[node].run(f"kill -0 {self.pids[node]} 2>/dev/null && echo yes || echo no")
        return out.strip() == "yes"

    def kill(self, node: str) -> None:
        self._signal(node, "KILL")
        self._wait_gone(node)

    def stop(self, node: str) -> None:
        self._signal(node, "CONT")
        self._signal(node, "TERM")
        self._wait_gone(node)

    def _wait_gone(self, node: str) -> None:
        self.stopped.add(node)
        if node in self.pids:
            pid = self.pids[node]
            self.connections[node].run(
                f"for i in $(seq 50); do kill -0 {pid} 2>/dev/null || exit 0; sleep 0.1; done; kill -9 {pid}; true"
            )

    def pause(self, node: str) -> None:
        self._signal(node, "STOP")

    def resume(self, node: str) -> None:
        self._signal(node, "CONT")

    def format(self, node: str, directory_id: str, bootstrap: tuple) -> None:
        words = self.target.format_command("python3", node, self._remote(node, "data"), directory_id, bootstrap)
        line = " ".join(shlex.quote(word) for word in words)
        # A run starts from a fresh disk and fresh logs, whatever an earlier run on this host left there.
        old = " ".join(shlex.quote(self._remote(node, name)) for name in ("data", "events.jsonl", "node.log"))
        self.connections[node].run(f"cd {shlex.quote(self.base[node])} && rm -rf {old} && {line}")

    def wipe(self, node: str) -> None:
        if self.running(node):
            raise ClusterError(f"wipe {node}: the node is running")
        self.connections[node].run(f"rm -rf {shlex.quote(self._remote(node, 'data'))}")

    def exited(self) -> dict[str, str]:
        found = {}
        for node in self.pids:
            if node not in self.stopped and not self.running(node):
                lines = self.connections[node].read(self._remote(node, "node.log")).decode(errors="replace")
                last = lines.strip().splitlines()[-1:] or ["(no output)"]
                found[node] = f"on {self.specs[node].ssh} exited: {last[0]}"
        return found

    def collect(self, dest: Path) -> None:
        for node, connection in self.connections.items():
            target = Path(dest) / node
            target.mkdir(parents=True, exist_ok=True)
            (target / "node.log").write_bytes(connection.read(self._remote(node, "node.log")))
            events = connection.read(self._remote(node, "events.jsonl"))
            (target / "events.jsonl").write_bytes(events)

    def node_files(self, node: str, part: str) -> Path:
        """`part` of the node's data directory, copied from its host over SFTP
        into the run's cluster folder (what was copied before replaced)."""
        local = self.data_dir(node) / part
        shutil.rmtree(local, ignore_errors=True)
        self.connections[node].get_tree(self._remote(node, f"data/{part}"), local)
        return local

    def close(self) -> None:
        for node in list(self.pids):
            self.kill(node)
        for connection in self.connections.values():
            connection.close()
