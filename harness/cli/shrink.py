"""`splitbrain shrink`: a failing run cut down to fewer faults and a shorter run that still fail, written as a campaign file."""

from __future__ import annotations

import argparse

from harness import limits
from history.errors import UsageError
from results.wording import counted

from .arguments import path_arg
from .outcome import EXIT_VALID
from .runs import execute, recorded_run

NAME = "shrink"
HELP = "fewer faults and a shorter run that still fail, as a campaign file"


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", type=path_arg, metavar="RUN_DIR", help="a failing run directory")
    parser.add_argument(
        "--trials",
        type=limits.TRIALS.parse,
        default=2,
        metavar="N",
        help="runs per candidate schedule (it fails if any of them fails)",
    )
    parser.add_argument("--to", type=path_arg, help="the campaign file to write (default: beside the trial runs)")
    parser.add_argument("--results", type=path_arg, help="where trial runs go (default: shrink-RUN beside RUN_DIR)")


def command(args: argparse.Namespace) -> int:
    from harness.shrinking import failing_checkers, shrink_run

    if (args.run_dir / "verdict.json").exists() and not failing_checkers(args.run_dir):
        raise UsageError(f"{args.run_dir}: no checker failed in this run: nothing to shrink")
    if args.to is not None and args.to.is_dir():  # (refused before any trial runs, not after)
        raise UsageError(f"--to {args.to}: a folder; name the campaign file to write")
    if args.to is not None and not args.to.resolve().parent.is_dir():
        raise UsageError(f"--to: {args.to.parent} is not a folder")
    results = args.results or args.run_dir.resolve().parent / f"shrink-{args.run_dir.name}"
    config = recorded_run(args.run_dir, results, quiet=True)
    shrunk, toml = shrink_run(args.run_dir, config, args.trials, args.to, lambda c: execute(c)[0])
    print(
        f"shrunk: {counted(shrunk.faults, 'fault')}, {shrunk.time_limit_s:g} s, still failing; campaign: {toml} "
        f"(splitbrain campaign {toml}); trial runs in {results}"
    )
    return EXIT_VALID
