"""`splitbrain gate`: the release gate: many runs' verdicts against a policy, with JUnit XML."""

from __future__ import annotations

import argparse
from pathlib import Path

from history.errors import UsageError

from .arguments import path_arg, writable_folder
from .outcome import EXIT_INVALID, EXIT_VALID

NAME = "gate"
HELP = "the release gate: verdicts of many runs against a policy (TOML)"


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "results", type=path_arg, nargs="+", metavar="RESULTS", help="run directories, or folders of them"
    )
    parser.add_argument("--policy", type=path_arg, required=True, help="see results/gate.py for its keys")
    parser.add_argument("--junit", type=path_arg, default=Path("gate-junit.xml"), help="where the JUnit XML goes")


def command(args: argparse.Namespace) -> int:
    """Exit 0 only when every run meets the policy; JUnit XML either way."""
    from results.gate import judge, judge_mutation, junit, load_policy, mutation_reports
    from results.recording import find_run_dirs

    policy = load_policy(args.policy)
    reports = mutation_reports(args.results) if policy.mutation else []
    # A folder that holds only a mutation report is judged on that alone.
    with_runs = [path for path in args.results if not (mutation_reports([path]) and not _has_runs(path))]
    runs = find_run_dirs(with_runs) if with_runs or not reports else []
    if args.junit.is_dir():
        raise UsageError(f"--junit {args.junit}: a folder; name the XML file to write")
    checks = [check for run_dir in runs for check in judge(run_dir, policy)] + judge_mutation(reports, policy)
    writable_folder(args.junit.parent, "--junit")
    junit(checks, args.junit)
    failed = [c for c in checks if c.failure]
    for check in failed:
        print(f"FAIL {check.run}: {check.name}: {check.failure}")
    verdict = "FAIL" if failed else "PASS"
    failed_runs = len({c.run for c in failed})
    print(
        f"gate: {verdict} ({len(runs)} runs, {len(checks)} checks, {len(failed)} failed in {failed_runs} runs; "
        f"JUnit XML: {args.junit})"
    )
    return EXIT_INVALID if failed else EXIT_VALID


def _has_runs(path: Path) -> bool:
    """Whether `find_run_dirs` finds run directories at `path` (itself one, or a folder of them)."""
    from results.recording import HistoryError, find_run_dirs

    try:
        return bool(find_run_dirs([path]))
    except HistoryError:
        return False
