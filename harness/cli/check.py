"""`splitbrain check`: run directories checked again, and their verdicts written."""

from __future__ import annotations

import argparse
import sys

from tqdm import tqdm

from harness import crash, limits
from history.errors import UsageError

from .arguments import path_arg
from .outcome import EXIT_ERROR, EXIT_VALID, _no_bar, exit_code, one_line, verdict_line

NAME = "check"
HELP = "check run directories (also ones left by crashed runs or imported)"


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "run_dirs", type=path_arg, nargs="+", metavar="RUN_DIR", help="run directories, or folders of them"
    )
    parser.add_argument(
        "--budget",
        type=limits.BUDGET_S.parse,
        default=30.0,
        help="seconds the linearizability search may spend per run (then: unknown)",
    )
    parser.add_argument(
        "--piece-rows",
        type=limits.PIECE_ROWS.parse,
        default=None,
        help="history rows read at a time: a longer history is checked in pieces, in memory that does not grow with it "
        "(default 500,000)",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def command(args: argparse.Namespace) -> int:
    """Each run directory checked and its verdict written; one line per run; the
    worst exit code. A run that cannot be checked is an error line of its own
    (exit 2), and the others are still checked."""
    from results.checking import check_and_record
    from results.memory import arrow_hands_back
    from results.recording import find_run_dirs

    arrow_hands_back()

    try:
        run_dirs = find_run_dirs(args.run_dirs)
    except OSError as error:
        raise UsageError(str(error)) from None
    worst = EXIT_VALID
    for run_dir in tqdm(run_dirs, desc="runs", unit="run", disable=_no_bar(args, run_dirs)):
        try:
            verdict = check_and_record(run_dir, args.budget, args.piece_rows)
            for warning in verdict.get("warnings", []):
                tqdm.write(f"splitbrain: warning: {warning}", file=sys.stderr)
        except (UsageError, OSError) as error:
            tqdm.write(one_line(f"error   {run_dir}: {error}"), file=sys.stderr)
            worst = max(worst, EXIT_ERROR)
            continue
        except Exception as error:  # a bug of ours on this run: the others are still checked
            tqdm.write(
                one_line(
                    f"error   {run_dir}: internal error: {type(error).__name__}: {error} "
                    f"(traceback in {crash.log(run_dir)})"
                ),
                file=sys.stderr,
            )
            worst = max(worst, EXIT_ERROR)
            continue
        tqdm.write(verdict_line(run_dir, verdict))
        worst = max(worst, exit_code(verdict))
    return worst
