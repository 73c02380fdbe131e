"""Figures for the harness: set-up times, time to first leader, nemesis
invoke-to-in-force latency, and the op rate the harness records.

Run: .venv/bin/python benchmarks/harness_figures.py [--cold] [--backend docker]

`--cold` removes the node image first and times building it from nothing
(debootstrap + docker import).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import pandas as pd

from harness.docker_image import IMAGE, ensure_image
from harness.links import OwnToxiproxy, ToxiproxyServer, wait_for_api
from harness.run import Run, RunConfig
from results.recording import load_history


def timed(fn):
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def cold_image() -> None:
    subprocess.run(["docker", "rmi", "-f", IMAGE], capture_output=True)
    seconds, _ = timed(ensure_image)
    print(f"cold image build (debootstrap + import): {seconds:.1f} s")


def link_server() -> None:
    seconds, own = timed(lambda: OwnToxiproxy().start())
    own.stop()
    print(f"link proxy server start (local process, API answering): {seconds * 1000:.0f} ms")


def campaign(backend: str, root: Path, **overrides) -> Path:
    # The random schedule, on which docs/benchmarks.md's figures were taken: its faults come every interval.
    config = RunConfig(backend=backend, results=root, progress=False, nemesis_strategy="random", **overrides)
    run = Run(config)
    run.execute()
    return run.dir


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cold", action="store_true")
    parser.add_argument("--backend", default="docker", choices=["docker", "local"])
    args = parser.parse_args()
    if args.cold:
        cold_image()
    link_server()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        if args.backend == "docker":
            from harness.docker_cluster import DockerCluster

            cluster = DockerCluster(root / "c", "bench-proxy", 1)
            try:
                seconds, _ = timed(lambda: wait_for_api(ToxiproxyServer(cluster.start_toxiproxy())))
                print(f"link proxy server start (container, API answering): {seconds * 1000:.0f} ms")
            finally:
                cluster.close()
        ups = []
        for attempt in range(3):
            run_dir = campaign(args.backend, root, nodes=5, nemesis=[], time_limit_s=0.5, seed=attempt)
            ups.append(first_leader_s(run_dir))
        print(
            f"{args.backend}, 5 nodes: cluster up (network, proxies, nodes) to first leader:"
            f" {statistics.median(ups):.2f} s median of {len(ups)} ({', '.join(f'{u:.2f}' for u in ups)})"
        )
        faults = ["partition", "pause", "kill", "restart", "bounce", "wipe", "latency"]
        run_dir = campaign(args.backend, root, nodes=5, nemesis=faults, time_limit_s=40, interval_s=1.0, seed=7)
        print(f"{args.backend}, 5 nodes: nemesis invoke -> confirmed in force (ms), from the history:")
        for f, row in in_force_ms(run_dir).iterrows():
            print(f"  {f:10} n={int(row['count']):3}  median {row['50%']:7.1f}  max {row['max']:7.1f}")
        run_dir = campaign(args.backend, root, nodes=3, nemesis=[], time_limit_s=10, rate=5000, concurrency=64)
        history = load_history(run_dir)
        clients = history[history["process"] >= 0]
        done = clients[clients["type"] != "invoke"]
        span_s = (done["time_ns"].max() - clients["time_ns"].min()) / 1e9
        print(
            f"{args.backend}, 3 nodes, 64 clients, no faults: {len(done) / span_s:.0f} ops/s recorded"
            f" ({(done['type'] == 'ok').mean():.1%} ok)"
        )


def first_leader_s(run_dir: Path) -> float:
    """Seconds from the run's start (its clock's zero) to the first leadership in any node log."""
    events = pd.read_parquet(run_dir / "events.parquet")
    leaders = events[(events["event"] == "transition") & (events["state"] == "leader")]
    return leaders["time_ns"].min() / 1e9


def in_force_ms(run_dir: Path) -> pd.DataFrame:
    history = load_history(run_dir)
    nemesis = history[history["process"] == -1]
    invokes = nemesis[nemesis["type"] == "invoke"].reset_index(drop=True)
    completions = nemesis[nemesis["type"] != "invoke"].reset_index(drop=True)
    latency = (completions["time_ns"] - invokes["time_ns"]) / 1e6
    return latency.groupby(invokes["f"]).describe()


if __name__ == "__main__":
    main()
