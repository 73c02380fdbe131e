"""Knowing when to stop (issue 38): a guided campaign of the correct
reference quorum (local, 3 nodes, append, the guided nemesis's default
faults, `--time-limit` s a run) under `--until-saturated P`, from one seed,
adding runs with fresh seeds until Good–Turing's chance that the next run
hits a coverage cell never hit falls below P, or `--max-runs`. Its runs go
on Spark (`--spark`, default `local[4]`) or, with `--spark ""`, serially.

Printed: the chance after each run, the runs it took, the coverage cells
hit in all, and whether it stopped by itself (the goal) rather than at its
budget; every run must be valid (the correct node).

    .venv/bin/python benchmarks/saturation.py [--below 0.05] [--max-runs 200] [--time-limit 10] [--spark local[4]]
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CAMPAIGN = """
[campaign]
name = "saturation"
results = "{results}"
backend = "local"
nodes = 3
time_limit_s = {seconds}
workloads = ["append"]
seeds = [1]
until_saturated = {below}
max_runs = {max_runs}
{spark}
[targets.correct]
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--below", type=float, default=0.05)
    parser.add_argument("--max-runs", type=int, default=200)
    parser.add_argument("--time-limit", type=float, default=10)
    parser.add_argument("--spark", default="local[4]")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="saturation-"))
    try:
        config = work / "c.toml"
        spark = f'spark = "{args.spark}"' if args.spark else ""
        config.write_text(
            CAMPAIGN.format(
                results=work, seconds=args.time_limit, below=args.below, max_runs=args.max_runs, spark=spark
            )
        )
        start = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-m", "harness.cli", "campaign", "--quiet", str(config)],
            cwd=ROOT,
            capture_output=True,
            text=True,
        )
        seconds = time.monotonic() - start
        chances = [int(c) for c in re.findall(r"coverage cell never hit: (\d+)%", done.stdout)]
        folder = work / "saturation"
        verdicts = [json.loads(p.read_text()) for p in folder.glob("correct-*/verdict.json")]
        cells = {
            (c["fault"], c["role"], c["with"]) for v in verdicts for c in (v.get("coverage") or {}).get("cells", [])
        }
        valid = sum(v["valid"] is True for v in verdicts)
        print(f"chance after each run (%): {' '.join(map(str, chances))}")
        print(f"runs: {len(verdicts)} ({valid} valid) in {seconds:.0f} s; coverage cells hit: {len(cells)}")
        by_itself = bool(chances) and chances[-1] <= args.below * 100 and len(verdicts) < args.max_runs
        print(
            f"SATURATION stopped by itself below {args.below:.0%}: {by_itself} after {len(verdicts)} runs (goal: yes)"
        )
        if done.returncode not in (0, 1):
            print(done.stderr.strip()[-800:])
        return 0 if by_itself and valid == len(verdicts) else 1
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
