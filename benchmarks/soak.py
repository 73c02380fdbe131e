"""Soak: back-to-back short runs, every tenth cut by SIGINT or SIGKILL (in
turn), then a count of what any of them left behind: containers, networks,
processes (recorded in a ledger and still alive, or carrying a run's mark),
reapers, and loopback ports still listening.

    .venv/bin/python benchmarks/soak.py                      # 100 runs on Docker
    .venv/bin/python benchmarks/soak.py --runs 20 --backend local

Exits 1 when anything was left.
"""

from __future__ import annotations

import argparse
import json
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import docker

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.ownership import LEDGER, RUN_ENV, RUN_LABEL, alive, marked_processes, read_ledger  # noqa: E402
from results.recording import PARTIAL, partial  # noqa: E402

REAPER_GRACE_S = 30.0


def run_once(results: Path, backend: str, cut: str | None) -> tuple[int, float]:
    command = [
        sys.executable,
        "-m",
        "harness.cli",
        "run",
        "--backend",
        backend,
        "--nodes",
        "3",
        "--quiet",
        "--results",
        str(results),
        "--time-limit",
        "4",
        "--interval",
        "1",
        "--nemesis",
        "partition,kill,pause",
        "--nemesis-strategy",
        "random",
        "--seed",
        str(len(list(results.iterdir()))),
    ]
    started = time.monotonic()
    before = set(results.iterdir())
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if cut:
        # Cut it once its load is under way: the live history has client rows.
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and process.poll() is None:
            new = set(results.iterdir()) - before
            history = next(iter(new)) / "history.jsonl" if new else None
            if history and history.exists() and history.stat().st_size > 2000:
                break
            time.sleep(0.1)
        process.send_signal(signal.SIGINT if cut == "SIGINT" else signal.SIGKILL)
    return process.wait(), time.monotonic() - started


def leftovers(results: Path) -> dict[str, list[str]]:
    run_ids = {d.name.removesuffix(PARTIAL) for d in results.iterdir() if d.is_dir()}
    found: dict[str, list[str]] = {"containers": [], "networks": [], "processes": [], "reapers": [], "ports": []}
    client = docker.from_env()
    for container in client.containers.list(all=True, filters={"label": RUN_LABEL}):
        if container.labels.get(RUN_LABEL) in run_ids:
            found["containers"].append(container.name)
    for network in client.networks.list(filters={"label": RUN_LABEL}):
        if (network.attrs.get("Labels") or {}).get(RUN_LABEL) in run_ids:
            found["networks"].append(network.name)
    for run_id in run_ids:
        _, entries = read_ledger(next(d for d in (results / run_id, partial(results / run_id)) if d.exists()) / LEDGER)
        found["processes"] += [
            f"{run_id}: pid {e['process']}" for e in entries if "process" in e and alive(e["process"], e["start"])
        ]
        found["processes"] += [f"{run_id}: marked pid {pid}" for pid in marked_processes(RUN_ENV, run_id)]
        for entry in entries:
            for port in entry.get("ports", []):
                with socket.socket() as probe:
                    probe.settimeout(0.2)
                    if probe.connect_ex(("127.0.0.1", port)) == 0:
                        found["ports"].append(f"{run_id}: {port}")
    reapers = subprocess.run(["pgrep", "-f", f"harness.reaper {results}"], capture_output=True, text=True).stdout
    found["reapers"] = reapers.split()
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--backend", default="docker", choices=["docker", "local"])
    args = parser.parse_args()
    results = Path(tempfile.mkdtemp(prefix="splitbrain-soak-"))
    codes: dict[str, list[int]] = {"plain": [], "SIGINT": [], "SIGKILL": []}
    started = time.monotonic()
    for i in range(args.runs):
        cut = ("SIGINT", "SIGKILL")[(i // 10) % 2] if i % 10 == 9 else None
        code, seconds = run_once(results, args.backend, cut)
        codes[cut or "plain"].append(code)
        print(f"run {i + 1:3}/{args.runs}: {cut or 'to the end':10} exit {code}  {seconds:5.1f} s", flush=True)
    wall = time.monotonic() - started
    time.sleep(REAPER_GRACE_S)
    left = leftovers(results)
    print(
        json.dumps(
            {
                "backend": args.backend,
                "runs": args.runs,
                "wall_s": round(wall, 1),
                "exit_codes": {k: {str(c): v.count(c) for c in sorted(set(v))} for k, v in codes.items()},
                "left": {k: len(v) for k, v in left.items()},
                "details": {k: v for k, v in left.items() if v},
                "results": str(results),
            },
            indent=1,
        )
    )
    return 1 if any(left.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
