"""Stale reads on etcd 3.4: 5 Docker members under iptables partitions, the
register workload, 3 seeded runs of 30 s with `--serializable-reads` (a
member answers from its own state) and the same 3 with linearizable reads.
Prints, per run, whether `linearizable` flagged it and its first anomaly.
The goal: serializable reads flagged in at least 2 of 3 runs, linearizable
reads in none.

    .venv/bin/python benchmarks/etcd_reads.py [--seeds 1 2 3]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run(results: Path, seed: int, serializable: bool) -> dict:
    command = [
        sys.executable,
        "-m",
        "harness.cli",
        "run",
        "--target",
        "etcd",
        "--workload",
        "register",
        "--backend",
        "docker",
        "--nodes",
        "5",
        "--net",
        "iptables",
        "--nemesis",
        "partition",
        "--nemesis-strategy",
        "random",
        "--time-limit",
        "30",
        "--interval",
        "3",
        "--concurrency",
        "8",
        "--rate",
        "100",
        "--quiet",
        "--results",
        str(results),
        "--seed",
        str(seed),
        *(["--serializable-reads"] if serializable else []),
    ]
    before = set(results.iterdir())
    subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    [run_dir] = set(results.iterdir()) - before
    return json.loads((run_dir / "verdict.json").read_text())["checkers"]["linearizable"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    args = parser.parse_args()
    results = Path(tempfile.mkdtemp(prefix="splitbrain-etcd-reads-"))
    flagged = {True: 0, False: 0}
    print("| reads | seed | linearizable | first anomaly |")
    print("|---|---|---|---|")
    for serializable in (True, False):
        for seed in args.seeds:
            verdict = run(results, seed, serializable)
            anomaly = (verdict.get("anomalies") or [{}])[0].get("summary", "")
            flagged[serializable] += verdict["valid"] is False
            print(
                f"| {'serializable' if serializable else 'linearizable'} | {seed} | {verdict['valid']} | {anomaly} |",
                flush=True,
            )
    runs = len(args.seeds)
    print(
        f"\nserializable reads flagged in {flagged[True]} of {runs} runs (goal: at least 2); "
        f"linearizable reads flagged in {flagged[False]} of {runs} (goal: 0); runs in {results}"
    )
    return 0 if flagged[True] >= 2 and flagged[False] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
