"""`splitbrain cluster up|status|down`: a cluster brought up by hand, left
running between commands. `up` records what it started in a state file;
`down` removes everything splitbrain made, whether a state file exists or
not (containers and networks by label, node and proxy processes by command
line), so it also cleans up after a crashed run.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
import uuid
from pathlib import Path

from harness.backends import bring_up
from targets.kraft.client import call

OUR_MODULES = ("targets.kraft.node", "harness.toxiproxy")


def up(state_dir: Path, backend: str, nodes: int, node_args: tuple[str, ...] = ()) -> dict:
    state_dir = Path(state_dir)
    state_file = state_dir / "cluster.json"
    if state_file.exists():
        raise FileExistsError(f"{state_file}: a cluster is already up; run `splitbrain cluster down` first")
    run_id = f"manual-{uuid.uuid4().hex[:8]}"
    with contextlib.ExitStack() as stack:
        cluster, mesh = bring_up(stack, backend, state_dir / run_id, run_id, nodes, node_args)
        cluster.start_all()
        leader = cluster.wait_for_leader(30)
        stack.pop_all()  # up: it stays running until `down`
    url = f"http://{mesh.server.host}:{mesh.server.port}"
    state = {
        "backend": backend,
        "run_id": run_id,
        "toxiproxy": url,
        "clients": {node: list(cluster.client[node]) for node in cluster.ids},
        "leader": leader,
    }
    state_file.write_text(json.dumps(state, indent=2) + "\n")
    return state


def status(state_dir: Path) -> list[dict]:
    state_file = Path(state_dir) / "cluster.json"
    if not state_file.exists():
        raise FileNotFoundError(f"{state_file}: no cluster is up")
    state = json.loads(state_file.read_text())
    rows = []
    for node, address in state["clients"].items():
        try:
            rows.append(call(tuple(address), "status", 1.0))
        except OSError as error:
            rows.append({"node": node, "state": f"unreachable ({error})"})
    return rows


def down(state_dir: Path) -> list[str]:
    """Remove every container, network and process splitbrain made."""
    from docker.errors import DockerException

    from harness.docker_cluster import down as docker_down

    removed = []
    try:
        removed += docker_down()
    except DockerException:  # no Docker engine: nothing of ours can be there
        pass
    removed += kill_our_processes()
    state_file = Path(state_dir) / "cluster.json"
    if state_file.exists():
        state_file.unlink()
    return removed


def kill_our_processes() -> list[str]:
    """SIGKILL every process running one of splitbrain's node or proxy modules."""
    killed = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        words = [a.decode(errors="replace") for a in argv]
        if any(a == "-m" and b in OUR_MODULES for a, b in zip(words, words[1:])):
            try:
                os.kill(int(proc.name), signal.SIGCONT)
                os.kill(int(proc.name), signal.SIGKILL)
                killed.append(f"pid {proc.name} ({' '.join(words[1:3])})")
            except ProcessLookupError:
                pass
    time.sleep(0.1 if killed else 0)
    return killed
