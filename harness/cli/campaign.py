"""`splitbrain campaign`: a matrix of runs from a TOML file, resumable."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from tqdm import tqdm

from harness.limits import DEFAULT_MAX_RUNS, MAX_RUNS, RUNS_PER_HOST, SATURATED
from results.wording import counted

from .arguments import path_arg
from .mutate import scores
from .outcome import EXIT_VALID, exit_code, verdict_line

NAME = "campaign"
HELP = "a matrix of runs from a TOML file; resumable"


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("config", type=path_arg, metavar="CONFIG.toml", help="the matrix (its keys: docs/campaigns.md)")
    parser.add_argument(
        "--results", type=path_arg, help="where the campaign folder goes (default: the file's results key)"
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument(
        "--until-saturated",
        type=SATURATED.parse,
        metavar="P",
        help="after the matrix, keep adding runs (its runs in turn, fresh seeds) until the chance that the next "
        "run hits a coverage cell never hit (Good-Turing) is below P (the file's until_saturated)",
    )
    parser.add_argument(
        "--max-runs",
        type=MAX_RUNS.parse,
        metavar="N",
        help="at most N runs in all (the file's max_runs): the matrix's first N; with --until-saturated, the matrix "
        f"and the runs it adds (default {DEFAULT_MAX_RUNS} then)",
    )
    parser.add_argument(
        "--spark",
        metavar="MASTER",
        help="run the runs as Spark tasks on this master (local[N], spark://HOST:PORT, ...; the file's spark), "
        "as many at once as it has cores",
    )
    parser.add_argument(
        "--runs-per-host",
        type=RUNS_PER_HOST.parse,
        metavar="N",
        help="with --spark: at most N runs at once on one host (the file's runs_per_host; Docker runs are heavy)",
    )


def command(args: argparse.Namespace) -> int:
    """The matrix of runs, resumable; one line per run as it finishes; the worst exit code."""
    from harness import campaign

    worst = EXIT_VALID

    def finished_run(run_dir: Path, chance: float | None) -> None:
        nonlocal worst
        verdict = json.loads((run_dir / "verdict.json").read_text())
        tqdm.write(verdict_line(run_dir, verdict))
        if chance is not None:
            tqdm.write(f"  chance the next run hits a coverage cell never hit: {chance:.0%} (Good-Turing)")
        worst = max(worst, exit_code(verdict))

    rule = campaign.stopping_rule(args.config, args.until_saturated, args.max_runs)
    runner = campaign.spark_runner(args.config, args.spark, args.runs_per_host, tqdm.write)
    mutation = campaign.mutation_settings(args.config)  # checked before any run
    folder, run_dirs = campaign.execute(args.config, not args.quiet, args.results, finished_run, rule, runner)
    print(f"campaign: {counted(len(run_dirs), 'run')} in {folder}; summary: {folder / 'summary.html'}")
    if mutation is not None:
        from harness.campaign_mutation import FOLDER, measured
        from results.gate import MUTATION_REPORT

        report = measured(
            folder, mutation, lambda items: tqdm(items, desc="mutants", unit="mutant", disable=args.quiet)
        )
        print(f"mutation: {scores(report)}; report: {folder / FOLDER / MUTATION_REPORT}")
    return worst
