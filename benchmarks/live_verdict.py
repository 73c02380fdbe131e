"""How soon the live verdict comes after a long run's load (issue "hours of
load"): one `splitbrain run --check-live` of the reference quorum's correct
node (local, 3 nodes, append, no faults) at `--rate` for `--seconds`, then
live.json's figures: how long after the end of load the live verdict was
said (goal: 1 s, for 10 minutes at 5,000 ops/s answered), the last look's
time and rows, the number of looks, and the live and batch verdicts. It asks
7,000 a second: clients pace from each answer, so they answer fewer than
they are asked for.

    .venv/bin/python benchmarks/live_verdict.py [--seconds 600] [--rate 7000] [--concurrency 300] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GOAL_S = 1.0
GOAL_RATE = 5000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=600)
    parser.add_argument("--rate", type=int, default=7000)
    parser.add_argument("--concurrency", type=int, default=300)
    parser.add_argument("--keep", type=Path, help="keep the run directory under this folder")
    args = parser.parse_args()
    results = args.keep or Path(tempfile.mkdtemp(prefix="splitbrain-live-"))
    command = [
        sys.executable, "-m", "harness.cli", "run", "--check-live", "--backend", "local", "--nodes", "3",
        "--workload", "append", "--nemesis", "none", "--rate", str(args.rate),
        "--concurrency", str(args.concurrency), "--time-limit", str(args.seconds), "--seed", "1", "--quiet",
        "--results", str(results),
    ]  # fmt: skip
    began = time.monotonic()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    wall_s = time.monotonic() - began
    run_dirs = [d for d in results.iterdir() if (d / "live.json").exists()]
    if not run_dirs:
        sys.exit(f"the run left no live.json (exit {done.returncode}): {done.stderr.strip()[-500:]}")
    [run_dir] = run_dirs
    live = json.loads((run_dir / "live.json").read_text())
    verdict = json.loads((run_dir / "verdict.json").read_text())
    last = live["last"]
    print(
        f"reference quorum, append, local, 3 nodes, {args.concurrency} clients, --rate {args.rate}, "
        f"{args.seconds} s, no faults, --check-live: {last['rows']:,} history rows; "
        f"{live['tally']['operations'] / args.seconds:,.0f} operations answered a second "
        f"(asked {args.rate:,}; goal at least {GOAL_RATE:,})"
    )
    print(
        f"live verdict {json.dumps(live['valid'])}, {live['verdict_after_load_s']:.2f} s after load ended "
        f"(goal at most {GOAL_S:g} s); the last look took {last['took_s']:.2f} s; {live['looks']} looks"
    )
    print(f"batch verdict {json.dumps(verdict['valid'])}; the whole run {wall_s:.0f} s (exit {done.returncode})")
    if args.keep is None:
        shutil.rmtree(results, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
