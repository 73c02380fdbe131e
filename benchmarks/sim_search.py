"""The novelty search in the simulator against random schedules (issue 39):
for each planted bug, `splitbrain simulate --keep-going` over the same
seeds with `--search random` and `--search novelty`, 5 nodes, 20 steps a
schedule; printed: the schedules that broke an invariant, out of how many,
and the seconds each took. The novelty search chooses as `run
--nemesis-strategy novelty` does, over the simulated nodes' statuses.

    .venv/bin/python benchmarks/sim_search.py [--schedules 100] [--nodes 5]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# What a bug needs to be there at all: followers that fsync on a timer.
NEEDS = {"ack-before-fsync": ["--flush-interval-ms", "100"], "ignore-generation": ["--flush-interval-ms", "100"]}
BUGS = ("forget-vote", "ack-before-commit", "stale-read", "prevote-always", "ack-before-fsync", "ignore-generation")


def found(bug: str, search: str, args: argparse.Namespace) -> tuple[int, float]:
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "harness.cli", "simulate", "--bug", bug, "--search", search, "--nodes", str(args.nodes)]
        + ["--schedules", str(args.schedules), "--keep-going", "--quiet", *NEEDS.get(bug, [])],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    if done.returncode not in (0, 1):
        raise SystemExit(f"simulate --bug {bug} --search {search}: {done.stderr.strip()}")
    verdict = json.loads(done.stdout)
    return len(verdict["checkers"]["simulation-invariants"]["anomalies"]), time.monotonic() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--schedules", type=int, default=100)
    parser.add_argument("--nodes", type=int, default=5)
    args = parser.parse_args()
    print(
        f"| bug | random: schedules failed of {args.schedules} | novelty: schedules failed | seconds (random, novelty) |"
    )
    print("|---|---|---|---|")
    for bug in BUGS:
        (random_found, random_s), (novelty_found, novelty_s) = (found(bug, s, args) for s in ("random", "novelty"))
        print(f"| {bug} | {random_found} | {novelty_found} | {random_s:.0f}, {novelty_s:.0f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
