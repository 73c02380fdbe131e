"""`splitbrain analyze`: an archive re-checked and summarised on Spark."""

from __future__ import annotations

import argparse

from tqdm import tqdm

from harness import crash, limits
from history.errors import UsageError

from .arguments import path_arg, writable_folder
from .outcome import EXIT_ERROR, EXIT_INVALID, EXIT_VALID

NAME = "analyze"
HELP = "re-check and summarise an archive on Spark (PySpark)"


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("archive", type=path_arg, metavar="ARCHIVE", help="an archive folder (splitbrain archive --to)")
    parser.add_argument("--master", default="local[*]", help="a Spark master URL (default: local[*])")
    parser.add_argument("--out", type=path_arg, help="where the summaries go (default: ARCHIVE/analysis)")
    parser.add_argument(
        "--budget", type=limits.BUDGET_S.parse, default=30.0, help="seconds of linearizability search per (run, key)"
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def command(args: argparse.Namespace) -> int:
    """The archive re-checked and summarised on Spark. Exit 2 when an entry is
    corrupt or the re-check contradicts an archived verdict (the archive
    cannot be trusted), else 1 when a run fails a safety checker."""
    from results.archive import read_manifest
    from results.spark_pipeline import analyze
    from results.spark_session import master_problem

    if not (args.archive / "manifest.json").exists():
        raise UsageError(f"{args.archive}: not an archive (no manifest.json)")
    read_manifest(args.archive)  # one that cannot be read is refused before --out is made
    problem = master_problem(args.master)
    if problem:
        raise UsageError(f"--master {args.master}: {problem}")
    writable_folder(args.out or args.archive / "analysis", "--out")
    crash.write_here(args.out or args.archive / "analysis")
    with tqdm(desc="analyze", unit="run", disable=args.quiet) as bar:

        def step(name: str, done: int = 0, total: int | None = None) -> None:
            bar.set_postfix_str(name, refresh=False)
            if total is not None:
                bar.total = total
            bar.update(done - bar.n)

        found = analyze(args.archive, args.master, args.out, args.budget, step)
    for problem in found["problems"]:
        print(f"CORRUPT {args.archive}: {problem}")
    verdicts = found["verdicts"]
    failed = verdicts[verdicts["valid"] == "false"]
    print(
        f"analyze: {verdicts['run_id'].nunique()} runs re-checked on Spark, {failed['run_id'].nunique()} failing a safety checker"
    )
    if len(found["failure_rate"]):
        print(found["failure_rate"].to_string(index=False))
    for row in found["saturation"].itertuples(index=False):
        print(
            f"SATURATION {row[0] or '(no option set)'}: {row.runs} runs, {row.cells} cells, "
            f"{row.hit_once} hit by one run only: chance the next run hits a new cell {row.unseen_chance:.0%}"
        )
    for row in found["groups"].itertuples(index=False):
        print(
            f"GROUP{' NEW' if row.new else ''} {row.failure_group}: {row.runs} runs ({row.option_sets}), "
            f"first {row.first_run}, last {row.last_run}; shrink the first: {row.shrink}"
        )
    for row in found["flaky"].itertuples(index=False):
        print(f"FLAKY {row.failed} of {row.runs} runs failed: {', '.join(row.run_ids)}")
    for row in found["disagreements"].itertuples(index=False):
        print(f"DISAGREES {row.run_id}: {row.checker}: archived {row.archived}, re-checked {row.rechecked}")
    print(f"analysis written to {found['out']}")
    if found["problems"] or len(found["disagreements"]):
        return EXIT_ERROR
    return EXIT_INVALID if len(failed) else EXIT_VALID
