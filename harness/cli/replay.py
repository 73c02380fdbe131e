"""`splitbrain replay`: a run again, from its run directory: its settings, seed and recorded faults; then whether the verdict came back."""

from __future__ import annotations

import argparse

from .arguments import path_arg
from .runs import execute, recorded_run

NAME = "replay"
HELP = "run a run again: its settings, seed, fault schedule and operations"


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", type=path_arg, metavar="RUN_DIR", help="the run directory to replay")
    parser.add_argument(
        "--results", type=path_arg, help="where the new run goes (default: replay-RUN, a folder beside RUN_DIR)"
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def command(args: argparse.Namespace) -> int:
    """The run's settings, seed and recorded faults again; then whether the verdict came back."""
    from results.run_index import verdict_of

    # Not beside RUN_DIR itself: in a campaign's folder, a gate over it would count the replay as one more run.
    results = args.results or args.run_dir.resolve().parent / f"replay-{args.run_dir.resolve().name}"
    config = recorded_run(args.run_dir, results, args.quiet)
    before = verdict_of(args.run_dir)
    run_dir, code = execute(config)
    now = verdict_of(run_dir)
    same = "reproduced" if now == before else "not reproduced"
    print(f"replay of {args.run_dir.name}: valid {before} then, valid {now} now: {same} ({run_dir})")
    return code
