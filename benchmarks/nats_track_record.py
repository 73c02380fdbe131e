"""NATS JetStream 2.9.10 under the guided nemesis (or `--strategy`'s): what the checkers find,
for the track record, docs/track-record.md (issue "a third real target"). Each row is one
kind of campaign, run once per seed on the local backend (3 servers, the
workload's stream or bucket of 3 replicas):

- `kill-bounce`: append under kills and bounces (`--nemesis kill,bounce`), 30 s;
- `pause`: append under pauses alone, 30 s (a server paused while the
  others elect a leader, then resumed);
- `serializable`: register with `--serializable-reads` (direct gets, which
  any replica answers) under kills and partitions, 30 s: stale reads flagged
  or not; `leader-reads`, the same faults with reads the stream leader answers;
- `guided-register`, `guided-append`: the default guided nemesis (its own
  fault set), 60 s;
- `kill-pause`: append under kills and pauses, a fault every 4 s, 24 s
  (tests/targets/nats/test_nats_runs.py's run);
- `isolate-leader`: append, the stream's leader cut off from both others
  for 8 s and healed, twice in 40 s (random schedules).

`--version V` runs a release of nats-server (`--target nats@V`) instead of
Debian's 2.9.10.

`--busy N` keeps N processes spinning beside the runs, each as busy as it
can be, and `--at-once K` makes K runs of each row and seed at once: the
loaded machine on which 2.9.10's replicas were seen to disagree (a
restarted leader's stream keeping an entry its log dropped; `--rows
kill-pause --seeds 4 ... --at-once 3 --busy 2`).

Prints a row per run (every checker that did not pass, operations,
acknowledged, faults made, disruptive elections, the first anomaly, or why
the run could not be judged, and the run's directory, whose report.html
shows its evidence), then per row how many runs each checker found false
and could not decide. The runs are kept for checking by hand.

    .venv/bin/python benchmarks/nats_track_record.py [--rows kill-bounce pause serializable leader-reads guided-register guided-append kill-pause]
        [--seeds 1 2 3 4 5] [--busy N] [--at-once K] [--strategy guided|novelty|random] [--version V]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path

from no_false_alarm import describe

ROOT = Path(__file__).resolve().parent.parent
ROWS = {
    "kill-bounce": ("append", 30, ["--nemesis", "kill,bounce"]),
    "pause": ("append", 30, ["--nemesis", "pause"]),
    "serializable": ("register", 30, ["--nemesis", "kill,partition", "--serializable-reads"]),
    "leader-reads": ("register", 30, ["--nemesis", "kill,partition"]),
    "guided-register": ("register", 60, []),
    "guided-append": ("append", 60, []),
    "kill-pause": ("append", 24, ["--nemesis", "kill,pause", "--interval", "4"]),
    # The stream's leader cut off from both others for 8 s, then healed, twice (random schedules: the
    # row's --nemesis-strategy comes after the command's, and argparse takes the last).
    "isolate-leader": (
        "append",
        40,
        ["--nemesis", "partition", "--topologies", "isolate-leader", "--nemesis-strategy", "random", "--interval", "8"],
    ),
}


def run(results: Path, row: str, strategy: str, target: str, seed: int, copy: int) -> tuple[Path, int, str]:
    workload, seconds, extra = ROWS[row]
    folder = results / row / f"{seed}-{copy}"
    folder.mkdir(parents=True, exist_ok=True)
    command = [
        sys.executable,
        "-m",
        "harness.cli",
        "run",
        "--target",
        target,
        "--backend",
        "local",
        "--nodes",
        "3",
        "--workload",
        workload,
        "--nemesis-strategy",
        strategy,
        "--time-limit",
        str(seconds),
        "--seed",
        str(seed),
        "--quiet",
        "--results",
        str(folder),
        *extra,
    ]
    before = set(folder.iterdir())
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    [run_dir] = set(folder.iterdir()) - before
    unsettled = [line.removeprefix("splitbrain: ") for line in done.stderr.splitlines() if "did not settle" in line]
    return run_dir, done.returncode, "; ".join(unsettled)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", nargs="+", choices=list(ROWS), default=list(ROWS))
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3, 4, 5])
    parser.add_argument("--busy", type=int, default=0, help="processes spinning beside the runs")
    parser.add_argument("--at-once", type=int, default=1, help="runs of each row and seed made at once")
    parser.add_argument("--strategy", default="guided", help="the nemesis strategy (--nemesis-strategy)")
    parser.add_argument(
        "--version", help="a release of nats-server the target pins (--target nats@VERSION); Debian's 2.9.10 without"
    )
    args = parser.parse_args()
    spinning = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.busy)]
    try:
        return campaign(args)
    finally:
        for process in spinning:
            process.kill()
            process.wait()


def campaign(args: argparse.Namespace) -> int:
    results = Path(tempfile.mkdtemp(prefix="splitbrain-nats-record-"))
    found_false: dict[str, Counter] = {row: Counter() for row in args.rows}
    undecided: dict[str, Counter] = {row: Counter() for row in args.rows}
    print(
        "| row | seed | exit | checkers not passed | completed ops | ok | faults | disruptive elections | first anomaly, or why undecided | run |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    started = time.monotonic()
    for row in args.rows:
        for seed in args.seeds:
            with ThreadPoolExecutor(args.at_once) as pool:
                target = f"nats@{args.version}" if args.version else "nats"
                done = list(pool.map(partial(run, results, row, args.strategy, target, seed), range(args.at_once)))
            for run_dir, code, unsettled in done:
                report(results, row, seed, run_dir, code, unsettled, found_false[row], undecided[row])
    print()
    for row in args.rows:
        false = ", ".join(f"{checker} in {n}" for checker, n in sorted(found_false[row].items())) or "none"
        unknown = ", ".join(f"{checker} in {n}" for checker, n in sorted(undecided[row].items())) or "none"
        print(f"{row}: {len(args.seeds) * args.at_once} runs; false: {false}; unknown: {unknown}")
    print(f"{time.monotonic() - started:.0f} s in all; runs in {results}")
    return 0


def report(results, row, seed, run_dir, code, unsettled, found_false: Counter, undecided: Counter) -> None:
    """One run's line, and its checkers counted for its row."""
    found = describe(run_dir)
    verdicts = [part.split("=") for part in found["checkers"].split(", ") if "=" in part]
    found_false.update(checker for checker, valid in verdicts if valid == "False")
    undecided.update(checker for checker, valid in verdicts if valid != "False")
    why = "; ".join(part for part in (found["first"], unsettled) if part)
    print(
        f"| {row} | {seed} | {code} | {found['checkers']} | {found['operations']} | {found['ok']} | "
        f"{found['faults']} | {found['disruptive']} | {why} | {run_dir.relative_to(results)} |",
        flush=True,
    )


if __name__ == "__main__":
    sys.exit(main())
