"""No false alarm on etcd 3.4: 5 Docker members cut with iptables, under
`partition,pause,kill`, 10 seeded runs of the `register` workload
(linearizable reads) and 10 of `append`. etcd 3.4.23 is correct under these
faults, so every checker must pass every run: a `false` is a false alarm (or
a bug in etcd to report), an `unknown` a checker that could not decide.

Prints a row per run (verdict, operations, acknowledged, faults, first
anomaly) and the count of runs with any verdict but `valid`.

    .venv/bin/python benchmarks/etcd_no_false_alarm.py [--seeds 1 .. 10] [--workloads register append] [--time-limit 30]
    .venv/bin/python benchmarks/etcd_no_false_alarm.py --nemesis membership,partition,kill --seeds 1 2 3 4 5
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
# What counts as a fault in the table: each one made (member changes one by one).
FAULTS = ["partition", "pause", "kill", "wipe", "remove-member", "add-learner", "promote"]


def run(results: Path, workload: str, seed: int, time_limit: int, nemesis: str) -> tuple[Path, int]:
    command = [sys.executable, "-m", "harness.cli", "run", "--target", "etcd", "--workload", workload,
               "--backend", "docker", "--nodes", "5", "--net", "iptables", "--nemesis", nemesis,
               "--time-limit", str(time_limit), "--interval", "3", "--concurrency", "8", "--rate", "100", "--quiet",
               "--results", str(results), "--seed", str(seed)]  # fmt: skip
    before = set(results.iterdir())
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    [run_dir] = set(results.iterdir()) - before
    return run_dir, done.returncode


def describe(run_dir: Path) -> dict:
    checkers = json.loads((run_dir / "verdict.json").read_text())["checkers"]
    history = pd.read_parquet(run_dir / "history.parquet")
    clients, nemesis = history[history["process"] >= 0], history[history["process"] == -1]
    bad = {name: c for name, c in checkers.items() if c["valid"] is not True}
    first = next(((name, (c.get("anomalies") or [{}])[0].get("summary") or c.get("error", "")) for name, c in bad.items()), None)
    return {
        "valid": not bad,
        "checkers": ", ".join(f"{name}={c['valid']}" for name, c in bad.items()) or "all true",
        "operations": int((clients["type"] != "invoke").sum()),
        "ok": int((clients["type"] == "ok").sum()),
        "faults": int(((nemesis["type"] == "ok") & nemesis["f"].isin(FAULTS)).sum()),
        "first": f"{first[0]}: {first[1]}" if first else "",
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=list(range(1, 11)))
    parser.add_argument("--workloads", nargs="+", default=["register", "append"])
    parser.add_argument("--time-limit", type=int, default=30)
    parser.add_argument("--nemesis", default="partition,pause,kill", help="also: membership,partition,kill")
    args = parser.parse_args()
    results = Path(tempfile.mkdtemp(prefix="splitbrain-etcd-valid-"))
    alarms = {workload: 0 for workload in args.workloads}
    print("| workload | seed | exit | verdict | completed ops | ok | faults | first anomaly |")
    print("|---|---|---|---|---|---|---|---|")
    started = time.monotonic()
    for workload in args.workloads:
        for seed in args.seeds:
            run_dir, code = run(results, workload, seed, args.time_limit, args.nemesis)
            row = describe(run_dir)
            alarms[workload] += not row["valid"]
            print(f"| {workload} | {seed} | {code} | {row['checkers']} | {row['operations']} | {row['ok']} | "
                  f"{row['faults']} | {row['first']} |", flush=True)  # fmt: skip
    print()
    for workload, count in alarms.items():
        print(f"{workload}: {count} of {len(args.seeds)} runs not valid (goal: 0)")
    print(f"{time.monotonic() - started:.0f} s in all; runs in {results}")
    return 0 if not any(alarms.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
