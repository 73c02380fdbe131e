"""Replay and shrinking of failing Docker runs (issue "guided faults"): for
each planted bug, the first failing run of it in a folder of runs (such as
the one `benchmarks/guided_find_rate.py` prints at its end), then

- for `ack-before-commit` and `stale-read` (the bugs the goal names),
  `splitbrain replay RUN_DIR`, `--tries` times: how often the verdict came back;
- `splitbrain shrink RUN_DIR --trials N`: the minutes it took, the faults
  (a guided turn's first and second faults count as one group) and fault
  operations left, and whether the shrunk campaign file fails again under
  `splitbrain campaign`.

The goals: every bug's run shrinks to at most 3 faults within 15 minutes and
its shrunk schedule fails again; replay reproduces the verdict of
`ack-before-commit` and `stale-read` in at least 2 of 3 tries.

    .venv/bin/python benchmarks/shrink_replay.py --runs DIR [--bugs ...] [--tries 3] [--trials 2] [--no-shrink] [--no-replay]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
import tomllib
from pathlib import Path

from results import run_options

ROOT = Path(__file__).resolve().parent.parent
SPLITBRAIN = [sys.executable, "-m", "harness.cli"]
REPLAYED = {"ack-before-commit", "stale-read"}


def failing_run(runs: Path, bug: str) -> Path | None:
    """The first run (by name) of this bug alone whose verdict is a violation."""
    for run_dir in sorted(p for p in runs.iterdir() if (p / "verdict.json").exists()):
        meta = json.loads((run_dir / "run.json").read_text())
        verdict = json.loads((run_dir / "verdict.json").read_text())
        if run_options.recorded(meta).get("bugs") == [bug] and verdict.get("valid") is False:
            return run_dir
    return None


def replays(run_dir: Path, tries: int, out: Path) -> int:
    reproduced = 0
    for _ in range(tries):
        done = subprocess.run(
            [*SPLITBRAIN, "replay", str(run_dir), "--quiet", "--results", str(out)],
            cwd=ROOT,
            capture_output=True,
            text=True,
        )
        reproduced += ": reproduced (" in done.stdout
    return reproduced


def shrinks(run_dir: Path, trials: int, out: Path) -> dict:
    """Minutes, groups and fault operations left, and whether the campaign file fails again."""
    toml = out / f"shrunk-{run_dir.name}.toml"
    began = time.monotonic()
    done = subprocess.run(
        [
            *SPLITBRAIN,
            "shrink",
            str(run_dir),
            "--trials",
            str(trials),
            "--to",
            str(toml),
            "--results",
            str(out / f"trials-{run_dir.name}"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    minutes = (time.monotonic() - began) / 60
    left = re.search(r"shrunk: (\d+) fault", done.stdout)
    if done.returncode != 0 or left is None:
        return {
            "minutes": minutes,
            "groups": None,
            "ops": None,
            "fails_again": None,
            "error": done.stderr.strip()[-300:],
        }
    schedule = tomllib.loads(toml.read_text())["targets"]["shrunk"]["schedule"]
    ops = sum(1 for op in schedule if op["f"] != "heal-all" and "of" not in (op.get("args") or {}))
    again = subprocess.run(
        [*SPLITBRAIN, "campaign", str(toml), "--quiet", "--results", str(out / "again")],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    return {"minutes": minutes, "groups": int(left.group(1)), "ops": ops, "fails_again": again.returncode == 1}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=Path, required=True, help="a folder of run directories")
    parser.add_argument("--bugs", nargs="+")
    parser.add_argument("--tries", type=int, default=3, help="replays per run (ack-before-commit and stale-read)")
    parser.add_argument("--trials", type=int, default=2, help="runs per shrink candidate")
    parser.add_argument("--no-shrink", action="store_true")
    parser.add_argument("--no-replay", action="store_true")
    parser.add_argument("--out", type=Path, default=Path("/tmp/splitbrain-shrink-replay"))
    args = parser.parse_args()
    if not args.runs.is_dir():
        print(f"shrink_replay: --runs {args.runs}: not a folder", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    bugs = args.bugs or sorted(
        {b for p in args.runs.glob("*/run.json") for b in run_options.planted(json.loads(p.read_text()))}
    )
    print("| bug | run | replays reproduced | shrink (min) | groups left | fault ops left | shrunk file fails again |")
    print("|---|---|---|---|---|---|---|")
    for bug in bugs:
        run_dir = failing_run(args.runs, bug)
        if run_dir is None:
            print(f"| {bug} | no failing run | | | | | |", flush=True)
            continue
        replay = not args.no_replay and bug in REPLAYED
        replayed = f"{replays(run_dir, args.tries, args.out / 'replays')} of {args.tries}" if replay else "-"
        row = (
            {"minutes": None, "groups": "-", "ops": "-", "fails_again": "-"}
            if args.no_shrink
            else shrinks(run_dir, args.trials, args.out)
        )
        minutes = "-" if row["minutes"] is None else f"{row['minutes']:.1f}"
        print(
            f"| {bug} | {run_dir.name} | {replayed} | {minutes} | {row['groups']} | {row['ops']} | {row['fails_again']} |"
            + (f" {row['error']}" if row.get("error") else ""),
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
