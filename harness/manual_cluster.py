"""`splitbrain cluster up|status|down`: a cluster brought up by hand, left
running between commands. `up` records what it started in the state
directory (`cluster.json` and the ledger of `harness/ownership.py`); `down`
removes what that directory recorded, and nothing else: the machine is
shared. `down --run ID` removes one run's objects by their marks (after a
crash, say), and `down --all` every object any splitbrain run made, listed
first.
"""

from __future__ import annotations

import contextlib
import json
import uuid
from pathlib import Path

import targets
from harness import ownership
from harness.backends import bring_up
from harness.cluster import DEFAULT_TARGET
from history.errors import ClusterError, SettingError, UsageError
from targets.interface import Address

STATE_FILE = "cluster.json"


class ClusterStateError(UsageError):
    """A state directory that cannot be used (the message names the file), or
    a cluster that did not come up (it names where the nodes' output is)."""


def up(state_dir: Path, backend: str, nodes: int, options: dict | None = None, target: str = DEFAULT_TARGET) -> dict:
    """A cluster of `target` with its `options` as given, started and left running; its state file's contents."""
    state_dir = Path(state_dir)
    state_file = state_dir / STATE_FILE
    if state_file.exists():
        raise ClusterStateError(f"{state_file}: a cluster is already up; run `splitbrain cluster down` first")
    run_id = f"manual-{uuid.uuid4().hex[:8]}"
    with contextlib.ExitStack() as stack:
        cluster, mesh = bring_up(
            stack, backend, state_dir / run_id, run_id, nodes, options, reaper=False, target=target
        )
        cluster.start_all()
        try:
            leader = cluster.wait_for_leader(30)
        except ClusterError as error:  # torn down on the way out
            raise ClusterStateError(f"cluster up: {error}; the nodes' output is under {state_dir / run_id}") from None
        stack.pop_all()  # up: it stays running until `down`
    server = getattr(mesh, "server", None)  # no link proxy server for a target without per-link routes
    url = f"http://{server.host}:{server.port}" if server else None
    state = {
        "backend": backend,
        "target": target,
        "run_id": run_id,
        "owner": cluster.ownership.owner,
        "toxiproxy": url,
        "clients": {node: list(cluster.client[node]) for node in cluster.ids},
        # The target's further listeners (an HTTP monitor), where it has them.
        "listeners": {
            node: {name: list(a) for name, a in cluster.client[node].listeners.items()} for node in cluster.ids
        },
        "leader": leader,
    }
    state_file.write_text(json.dumps(state, indent=2) + "\n")
    return state


def read_state(state_dir: Path) -> dict:
    state_file = Path(state_dir) / STATE_FILE
    if not state_file.exists():
        raise ClusterStateError(f"{state_file}: no cluster is up")
    try:
        state = json.loads(state_file.read_text())
        listeners = state.get("listeners") or {}
        clients = {
            str(node): Address(
                str(host), int(port), {str(name): (str(h), int(p)) for name, (h, p) in listeners.get(node, {}).items()}
            )
            for node, (host, port) in state["clients"].items()
        }
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
        raise ClusterStateError(f"{state_file}: not a cluster state file ({type(error).__name__}: {error})") from None
    return {**state, "clients": clients}


def status(state_dir: Path) -> list[dict]:
    state = read_state(state_dir)
    try:
        target = targets.get(state.get("target", DEFAULT_TARGET))
    except SettingError as error:
        raise ClusterStateError(f"{Path(state_dir) / STATE_FILE}: {error.reason}") from None
    rows = []
    for node, address in state["clients"].items():
        rows.append(target.status(address, 1.0) or {"node": node, "state": "unreachable"})
    return rows


def down(state_dir: Path) -> list[str]:
    """Remove what the state directory's ledgers recorded; returns what went."""
    state_dir = Path(state_dir)
    removed = []
    for ledger in ownership.find_ledgers(state_dir):
        removed += ownership.sweep(ledger)
    state_file = state_dir / STATE_FILE
    if state_file.exists():
        state_file.unlink()
    return removed


def down_run(run_id: str) -> list[str]:
    """Remove one run's containers and networks (by label) and processes (by
    the mark in their environment), wherever its records are."""
    return ownership.remove_runs(run_id)


def everything() -> list[str]:
    """What `down --all` would remove: one line per object, with its run."""
    found = ownership.everything()
    lines = [
        f"container {ownership.container_name(c)} (run {c.attrs['Labels'].get(ownership.RUN_LABEL)})"
        for c in found["containers"]
    ]
    lines += [f"network {n.name} (run {n.attrs.get('Labels', {}).get(ownership.RUN_LABEL)})" for n in found["networks"]]
    lines += [f"process {pid}" for pid in found["processes"]]
    lines += [f"mount {point}" for point in found["mounts"]]
    return lines


def down_all() -> list[str]:
    """Remove every labelled container and network and every marked process."""
    return ownership.remove_runs(None)
