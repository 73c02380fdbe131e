"""What one run (or one `splitbrain cluster up`) made, so that clean-up
touches only that: the machine is shared, and other users' runs look just
like ours from outside.

Each run has an owner id, unique to it, and a ledger `owned.jsonl` in its
directory. The ledger's first line names the run and the owner; every
process started is recorded (pid and kernel start time, so a reused pid is
never mistaken for ours), and every container and network is labelled with
the owner and recorded by id. Processes also carry the owner in their
environment (`SPLITBRAIN_OWNER`), which is how a process started a moment
before the harness died is still found. Nothing is ever matched by its
command line.

`sweep` removes what a ledger names; `harness.reaper` calls it when the
harness is gone (even after SIGKILL), and `splitbrain cluster down` calls it
for a state directory.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

LEDGER = "owned.jsonl"
RUN_LABEL = "splitbrain.run"
OWNER_LABEL = "splitbrain.owner"
RUN_ENV = "SPLITBRAIN_RUN"
OWNER_ENV = "SPLITBRAIN_OWNER"
MOUNT_SOURCE = "splitbrain-lazyfs"
REAPER_EXIT_TIMEOUT_S = 30.0


class Ownership:
    """The ledger of one run, written as things are made (each line flushed
    and fsynced, so a reaper reading it after a crash sees every entry)."""

    def __init__(self, directory: Path, run_id: str) -> None:
        self.path = Path(directory) / LEDGER
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.run_id = run_id
        self.owner = f"{run_id}-{os.getpid()}-{os.urandom(4).hex()}"
        self._append({"run": run_id, "owner": self.owner, "harness_pid": os.getpid()})

    @property
    def labels(self) -> dict[str, str]:
        return {RUN_LABEL: self.run_id, OWNER_LABEL: self.owner}

    def environment(self) -> dict[str, str]:
        """The environment for a child process: ours, plus the owner marks."""
        return {**os.environ, RUN_ENV: self.run_id, OWNER_ENV: self.owner}

    def process(self, pid: int) -> None:
        self._append({"process": pid, "start": start_time(pid)})

    def ports(self, ports: list[int]) -> None:
        """Ports on this machine's loopback that the run's processes listen on or publish."""
        self._append({"ports": sorted(ports)})

    def mount(self, path: Path) -> None:
        """A filesystem mounted at `path` (the lose-unfsynced disks): unmounted by a sweep."""
        self._append({"mount": str(path)})

    def docker(self) -> None:
        """Docker objects are coming: a sweep looks for the owner's label, so one
        made a moment before a crash, not yet recorded, is found too."""
        self._append({"docker": True})

    def container(self, container) -> None:
        self._append({"container": container.id, "name": container.name})

    def network(self, network) -> None:
        self._append({"network": network.id, "name": network.name})

    def _append(self, entry: dict) -> None:
        with open(self.path, "a", encoding="utf-8") as ledger:
            ledger.write(json.dumps(entry) + "\n")
            ledger.flush()
            os.fsync(ledger.fileno())

    def watch(self) -> Reaper:
        """Start this run's reaper: it sweeps the ledger once the harness is gone."""
        return Reaper(self.path)


class Reaper:
    """A watchdog process (`python -m harness.reaper LEDGER`) holding the read
    end of a pipe whose write end only this harness has. When the harness
    exits, however it exits, the pipe closes and the reaper sweeps. It runs
    in its own session, so a Ctrl-C or a signal to the harness's process
    group does not reach it."""

    def __init__(self, ledger: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "harness.reaper", str(ledger)],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=open(Path(ledger).with_name("reaper.log"), "ab"),
            start_new_session=True,
            cwd=Path(__file__).resolve().parent.parent,
        )

    def release(self) -> None:
        """The harness has torn down: let the reaper make its last sweep and wait for it."""
        if self.process.stdin and not self.process.stdin.closed:
            self.process.stdin.close()
        try:
            self.process.wait(REAPER_EXIT_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def proc_stat(pid: int | str) -> list[str] | None:
    """/proc/PID/stat from field 3 on (the command name, field 2, is in
    parentheses and may hold spaces)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None


def start_time(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (field 22): with the
    pid, it names one process for good."""
    fields = proc_stat(pid)
    return int(fields[19]) if fields else None


def alive(pid: int, started: int | None) -> bool:
    """The process that started at `started` still runs (a zombie, dead but
    not yet reaped by its parent, does not)."""
    fields = proc_stat(pid)
    return fields is not None and fields[0] != "Z" and int(fields[19]) == started


def read_ledger(path: Path) -> tuple[dict, list[dict]]:
    """The ledger's header and entries; a torn last line (a crash mid-write) is left out."""
    header: dict = {}
    entries: list[dict] = []
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError:
        return header, entries
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if not isinstance(entry, dict):
            continue
        if "owner" in entry and not header:
            header = entry
        else:
            entries.append(entry)
    return header, entries


def marked_processes(env_name: str, value: str | None) -> list[int]:
    """Pids in our own pid namespace whose environment has `env_name` (=
    `value`, if given). Processes inside containers show in /proc too; they
    are in another namespace and never matched here."""
    try:
        own_namespace = os.readlink("/proc/self/ns/pid")
    except OSError:
        own_namespace = None
    wanted = f"{env_name}={value}".encode() if value is not None else f"{env_name}=".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if own_namespace is not None and os.readlink(entry / "ns" / "pid") != own_namespace:
                continue
            variables = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(v == wanted or (value is None and v.startswith(wanted)) for v in variables):
            found.append(int(entry.name))
    return found


def kill_process(pid: int, started: int | None = None) -> bool:
    """SIGKILL one process (resumed first, should it be paused), only if it is
    still the one that started at `started`."""
    if not alive(pid, start_time(pid) if started is None else started):
        return False
    try:
        os.kill(pid, signal.SIGCONT)
        os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def sweep(path: Path) -> list[str]:
    """Remove everything the ledger at `path` names, and whatever carries its
    owner mark; returns what was removed. Removing what is already gone is
    no error, so sweeping twice is safe."""
    header, entries = read_ledger(path)
    owner = header.get("owner")
    removed = []
    recorded = {e["process"]: e.get("start") for e in entries if "process" in e}
    for pid, started in recorded.items():
        if kill_process(pid, started):
            removed.append(f"process {pid}")
    if owner:
        for pid in marked_processes(OWNER_ENV, owner):
            if pid not in recorded and kill_process(pid):
                removed.append(f"process {pid}")
    for mount in [e["mount"] for e in entries if "mount" in e]:
        if unmount(Path(mount)):
            removed.append(f"mount {mount}")
    if owner and any("container" in e or "network" in e or e.get("docker") for e in entries):
        removed += remove_docker_objects({"label": f"{OWNER_LABEL}={owner}"})
    return removed


def unmount(path: Path) -> bool:
    """Lazily unmount a FUSE mount this run made (its process may be gone
    too); False if nothing was mounted there."""
    try:
        done = subprocess.run(["fusermount3", "-u", "-z", str(path)], capture_output=True)
    except OSError:  # no fusermount3: nothing can be mounted
        return False
    return done.returncode == 0


def mount_source(run_id: str) -> str:
    """What a run's lose-unfsynced mounts name as their source (/proc/mounts'
    first field), so they are found by run with no ledger at hand."""
    return f"{MOUNT_SOURCE}:{run_id}"


def marked_mounts(run_id: str | None, mounts: Path = Path("/proc/mounts")) -> list[Path]:
    """The mount points of run `run_id`'s lose-unfsynced mounts (of any run's, with None)."""
    found = []
    for line in mounts.read_text(encoding="utf-8", errors="replace").splitlines():
        source, point = (line.split() + ["", ""])[:2]
        # (Mounts made before they named their run have the bare source: any run's.)
        ours = source.partition(":")[0] == MOUNT_SOURCE if run_id is None else source == mount_source(run_id)
        if ours:
            # /proc/mounts writes a space, tab, newline or backslash in a path as an octal escape.
            found.append(Path(re.sub(r"\\([0-7]{3})", lambda m: chr(int(m[1], 8)), point)))
    return found


def remove_runs(run_id: str | None) -> list[str]:
    """Remove what carries the mark of run `run_id` (of any run, with None):
    processes by their environment, their lose-unfsynced mounts by their
    source (a mount outlives its process: after a SIGKILL of the harness and
    its reaper both, it was left behind), containers and networks by their label."""
    removed = [f"process {pid}" for pid in marked_processes(RUN_ENV, run_id) if kill_process(pid)]
    removed += [f"mount {point}" for point in marked_mounts(run_id) if unmount(point)]
    label = RUN_LABEL if run_id is None else f"{RUN_LABEL}={run_id}"
    return removed + remove_docker_objects({"label": label})


def remove_docker_objects(selector: dict) -> list[str]:
    """Remove the containers, then the networks, that match a Docker filter."""
    import docker
    from docker.errors import APIError, DockerException, NotFound

    try:
        client = docker.from_env()
        containers = listed_containers(client, selector)
    except DockerException:  # no engine: nothing of ours can be there
        return []
    removed = []
    for container in containers:
        try:
            container.remove(force=True)
            removed.append(f"container {container_name(container)}")
        except NotFound:
            pass
    for network in client.networks.list(filters=selector):
        for attempt in range(10):
            try:
                network.remove()
                removed.append(f"network {network.name}")
                break
            except NotFound:
                break
            except APIError:  # endpoints still detaching
                time.sleep(0.2 * (attempt + 1))
    return removed


def listed_containers(client, selector: dict) -> list:
    """The containers that match a Docker filter, listed without inspecting
    each: one removed between the listing and its inspection (by a reaper,
    or the run's own teardown) would otherwise fail the whole listing."""
    return client.containers.list(all=True, filters=selector, sparse=True)


def container_name(container) -> str:
    """A listed container's name (a sparse listing has `Names`, not `Name`)."""
    return container.attrs["Names"][0].lstrip("/")


def find_ledgers(directory: Path) -> list[Path]:
    """Every ledger in a state or results directory (two levels down at most)."""
    directory = Path(directory)
    return sorted({*directory.glob(LEDGER), *directory.glob(f"*/{LEDGER}"), *directory.glob(f"*/*/{LEDGER}")})


def everything() -> dict[str, list]:
    """Every object any splitbrain run on this machine made, whoever owns it:
    labelled containers and networks, marked processes in our pid namespace,
    and lose-unfsynced mounts."""
    import docker
    from docker.errors import DockerException

    found: dict[str, list] = {
        "containers": [],
        "networks": [],
        "processes": marked_processes(RUN_ENV, None),
        "mounts": marked_mounts(None),
    }
    try:
        client = docker.from_env()
        found["containers"] = listed_containers(client, {"label": RUN_LABEL})
        found["networks"] = client.networks.list(filters={"label": RUN_LABEL})
    except DockerException:
        pass
    return found
