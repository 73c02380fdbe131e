"""Committed appends per second and commit latency of a real 3-node loopback
cluster of the reference quorum (fsync on every batch).

Run: .venv/bin/python benchmarks/throughput.py [--seconds 10] [--clients 8] [--window 32] [--lazy-disks]

With `--lazy-disks`, every data directory is on the lose-unfsynced
filesystem (harness/lazyfs.py), to price what that fault costs.

Each client keeps `window` appends in flight on one connection to the leader;
an append counts once the leader answers it, which it does only after the
high watermark covers it.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from harness.local_cluster import LocalCluster
from targets.kraft.client import Client


async def client_loop(address, window: int, deadline: float, latencies: list[float], errors: list[str]) -> None:
    client = await Client.connect(*address)
    counter = 0

    async def one() -> None:
        nonlocal counter
        while time.monotonic() < deadline:
            counter += 1
            start = time.perf_counter()
            answer = await client.call("append", 5.0, value=counter)
            if "error" in answer:
                errors.append(answer["error"])
            else:
                latencies.append(time.perf_counter() - start)

    try:
        await asyncio.gather(*[one() for _ in range(window)])
    finally:
        await client.close()


async def measure(address, clients: int, window: int, seconds: float) -> tuple[list[float], list[str], float]:
    latencies: list[float] = []
    errors: list[str] = []
    start = time.monotonic()
    deadline = start + seconds
    await asyncio.gather(*[client_loop(address, window, deadline, latencies, errors) for _ in range(clients)])
    return latencies, errors, time.monotonic() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--window", type=int, default=32)
    parser.add_argument("--nodes", type=int, default=3)
    parser.add_argument("--lazy-disks", action="store_true", help="data directories on harness/lazyfs.py")
    args = parser.parse_args()
    with (
        tempfile.TemporaryDirectory() as root,
        LocalCluster(Path(root), args.nodes, lazy_disks=args.lazy_disks) as cluster,
    ):
        cluster.start_all()
        leader = cluster.wait_for_leader()
        latencies, errors, elapsed = asyncio.run(
            measure(cluster.client[leader], args.clients, args.window, args.seconds)
        )
    latencies.sort()
    quantile = statistics.quantiles(latencies, n=100)
    print(
        f"{args.nodes} nodes{' on lazyfs' if args.lazy_disks else ''}, {args.clients} clients x {args.window} in flight, {elapsed:.1f} s:"
        f" {len(latencies) / elapsed:.0f} committed appends/s;"
        f" commit latency p50 {quantile[49] * 1000:.1f} ms, p99 {quantile[98] * 1000:.1f} ms;"
        f" errors {len(errors)}"
    )


if __name__ == "__main__":
    main()
