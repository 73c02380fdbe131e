"""From the simulator to a real cluster (issue 39): for each planted bug,
`splitbrain simulate` searches seeded random schedules (and, where they
fail none, the novelty search's on 5 nodes); the first failing ones are
written out (`--write-schedules`) and each is replayed on a real local
cluster of the reference quorum (`splitbrain replay`) a few times.
Printed: per bug, the schedules the simulator failed and, per schedule, in
how many replays the real run's checkers found a violation. The goal: every
bug the simulator finds reproduced by at least one of its schedules in at
least 1 of 3 trials.

    .venv/bin/python benchmarks/sim_to_real.py [--bugs forget-vote,...] [--schedules 300] [--per-bug 2] [--trials 3]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# What the simulator needs to reach a bug at all: power losses (followers
# fsync on a timer) or voter changes among the faults.
NEEDS = {
    "ack-before-fsync": ["--flush-interval-ms", "100"],
    "ignore-generation": ["--flush-interval-ms", "100"],
    "multi-voter-change": ["--membership"],
    "ignore-directory-id": ["--membership"],
    "ack-voter-early": ["--membership"],
}
BUGS = (
    "forget-vote",
    "ack-before-commit",
    "stale-read",
    "prevote-always",
    "ack-before-fsync",
    "ignore-generation",
    "multi-voter-change",
    "ignore-directory-id",
    "ack-voter-early",
)


def splitbrain(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness.cli", *args], cwd=ROOT, capture_output=True, text=True)


# Where the random schedules find nothing, the novelty search's (`--search
# novelty`) on 5 nodes: the only schedules that reach `ignore-generation`
# (2 of 100, docs/fault-search.md). It takes a few times as long a schedule.
SEARCHED = ["--search", "novelty", "--nodes", "5"]


def hunt(bug: str, folder: Path, schedules: int, per_bug: int) -> tuple[list[Path], str]:
    """The first `per_bug` schedules the simulator fails with `bug`, written
    as runs, and the search that found them: random schedules first, then
    (where they found none) a third as many of the novelty search's."""
    for search, extra, count in (("random", [], schedules), ("novelty", SEARCHED, max(1, schedules // 3))):
        written = folder / bug / search
        simulated = splitbrain(
            "simulate", "--bug", bug, "--schedules", str(count), "--keep-going", "--quiet",
            "--write-schedules", str(written), *extra, *NEEDS.get(bug, []),
        )  # fmt: skip
        if simulated.returncode not in (0, 1):
            raise SystemExit(f"simulate --bug {bug} {' '.join(extra)}: {simulated.stderr.strip()}")
        found = sorted(written.glob("sim-*"), key=lambda path: int(path.name.removeprefix("sim-")))
        if found:
            return found[:per_bug], search
    return [], "neither"


def replays(run_dir: Path, trials: int, results: Path) -> list[str]:
    """Each trial's verdict on the real cluster: true, false or unknown; or,
    for a replay that gave none, its exit status and last words (the other
    trials and bugs are still measured)."""
    verdicts = []
    for _ in range(trials):
        done = splitbrain("replay", str(run_dir), "--results", str(results), "--quiet")
        if done.returncode in (0, 1):
            verdicts.append(done.stdout.strip().splitlines()[-1].split("valid ")[-1].split(" now")[0])
        else:
            said = (done.stderr.strip().splitlines() or ["nothing"])[-1]
            verdicts.append(f"exit {done.returncode}: {said}")
    return verdicts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bugs", default=",".join(BUGS))
    parser.add_argument("--schedules", type=int, default=300)
    parser.add_argument("--per-bug", type=int, default=2)
    parser.add_argument("--trials", type=int, default=3)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="splitbrain-sim-to-real-"))
    outcome = {}
    for bug in args.bugs.split(","):
        schedules, search = hunt(bug, folder, args.schedules, args.per_bug)
        if not schedules:
            print(f"{bug}: the simulator failed none of its schedules, random or searched")
            continue
        counts = {}
        for run_dir in schedules:
            verdicts = replays(run_dir, args.trials, folder / "real" / bug)
            counts[run_dir.name] = verdicts.count("false")
            meta = json.loads((run_dir / "run.json").read_text())
            faults = len(meta["schedule"])
            print(
                f"{bug}: {search} {run_dir.name} ({meta['config']['nodes']} nodes, {meta['config']['workload']}, "
                f"{faults} operations): real {verdicts}",
                flush=True,
            )
        outcome[bug] = max(counts.values())
    reached = sum(1 for best in outcome.values() if best >= 1)
    print(
        f"\nreproduced on a real cluster: {reached} of {len(outcome)} bugs the simulator found (goal: all, in at least 1 of {args.trials})"
    )
    print(f"runs: {folder}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
