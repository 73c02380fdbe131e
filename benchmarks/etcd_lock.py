"""etcd 3.4.23's lock API under the `mutual-exclusion` checker: 3 local
members, the `lock` workload (acquire on a 3 s lease, add to a guarded list
with a plain read-then-write, release), 30 s runs, 5 seeds per row:

- waits beyond the lease: 8 clients and a 10 s client timeout, so a client
  may wait for the lock longer than its lease lives; with no faults and
  with `pause`;
- waits within the lease: 4 clients and a 1 s timeout (a client gives up,
  and revokes its lease, before the lease can run out); with `pause`.

etcd #11456 (fixed in 3.5 only): the server does not check, after a lock
request has waited, that the requester's lease and key still exist, so a
client whose lease ran out while it waited is granted the lock anyway, beside
the next holder. Prints a row per run and, per row of the matrix, the runs in
which the checker found two holders at once.

    .venv/bin/python benchmarks/etcd_lock.py [--seeds 1 2 3 4 5] [--time-limit 30]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MATRIX = [  # (name, clients, client timeout s, nemesis)
    ("waits beyond the lease", 8, 10, "none"),
    ("waits beyond the lease", 8, 10, "pause"),
    ("waits within the lease", 4, 1, "pause"),
]


def run(results: Path, seed: int, clients: int, timeout_s: int, nemesis: str, time_limit: int) -> dict:
    command = [
        sys.executable,
        "-m",
        "harness.cli",
        "run",
        "--target",
        "etcd",
        "--workload",
        "lock",
        "--nemesis",
        nemesis,
        "--nemesis-strategy",
        "random",
        "--concurrency",
        str(clients),
        "--op-timeout",
        str(timeout_s),
        "--time-limit",
        str(time_limit),
        "--interval",
        "3",
        "--quiet",
        "--results",
        str(results),
        "--seed",
        str(seed),
    ]
    before = set(results.iterdir())
    subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    [run_dir] = set(results.iterdir()) - before
    return json.loads((run_dir / "verdict.json").read_text())["checkers"]["mutual-exclusion"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3, 4, 5])
    parser.add_argument("--time-limit", type=int, default=30)
    args = parser.parse_args()
    results = Path(tempfile.mkdtemp(prefix="splitbrain-etcd-lock-"))
    found: dict[tuple, int] = {}
    print(
        "| waits | clients | timeout s | faults | seed | mutual-exclusion | grants | late grants | anomalies | first |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    started = time.monotonic()
    for name, clients, timeout_s, nemesis in MATRIX:
        for seed in args.seeds:
            verdict = run(results, seed, clients, timeout_s, nemesis, args.time_limit)
            stats, anomalies = verdict["stats"], verdict["anomalies"]
            kinds = ", ".join(sorted({a["kind"] for a in anomalies}))
            first = anomalies[0]["summary"] if anomalies else ""
            found[(name, nemesis)] = found.get((name, nemesis), 0) + (verdict["valid"] is False)
            print(
                f"| {name} | {clients} | {timeout_s} | {nemesis} | {seed} | {verdict['valid']} | {stats['acquired']} | "
                f"{stats['late_grants']} | {len(anomalies)} ({kinds}) | {first} |",
                flush=True,
            )
    print()
    for (name, nemesis), count in found.items():
        print(f"{name}, faults {nemesis}: two holders at once in {count} of {len(args.seeds)} runs")
    print(f"{time.monotonic() - started:.0f} s in all; runs in {results}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
