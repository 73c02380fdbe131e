"""`splitbrain bisect`: the first release of the target's server where a campaign's (or a failing run's) verdict changes."""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

import targets
from checkers.registry import NAMES
from harness import limits
from history.errors import UsageError

from .arguments import path_arg, writable_folder
from .outcome import EXIT_VALID

NAME = "bisect"
HELP = "the first release of the target's server where the verdict changes, by binary search"


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "source", type=path_arg, metavar="CAMPAIGN.toml|RUN_DIR", help="the runs to repeat: a campaign's, or one run's"
    )
    parser.add_argument(
        "--versions",
        required=True,
        metavar="OLDEST..NEWEST",
        help="the range of releases the target pins (`splitbrain targets NAME` lists them), both ends included",
    )
    parser.add_argument(
        "--runs", type=limits.TRIALS.parse, default=3, metavar="N", help="runs of each run per version, seeds in turn"
    )
    parser.add_argument(
        "--checker",
        choices=NAMES,
        metavar="NAME",
        help="a run finds the anomaly when this checker is false (default: any checker false); "
        f"one of {', '.join(NAMES)}",
    )
    parser.add_argument("--results", type=path_arg, default=Path("runs/bisect"), help="where each version's runs go")


def command(args: argparse.Namespace) -> int:
    """Exit 0 once the search ends: where the verdict changes is a measurement, not a verdict."""
    from harness.bisect import Probe, outcome, search

    bases = base_configs(args.source)
    name = targets.base(bases[0].target)
    versions = in_range(name, args.versions)
    writable_folder(args.results, "--results")

    def probe(version: str) -> Probe:
        from .runs import execute, validated

        codes, runs = [], []
        for config in bases:
            for repeat in range(args.runs):
                again = dataclasses.replace(
                    config,
                    target=f"{name}@{version}",
                    seed=config.seed + repeat,
                    run_id=None,
                    results=args.results / version,
                    progress=False,
                )
                validated(again)
                run_dir, code = execute(again)
                checkers = judged(run_dir)
                codes.append(outcome(code, checkers, args.checker))
                false = sorted(checker for checker, valid in (checkers or {}).items() if valid is False)
                runs.append({"run": str(run_dir), "seed": again.seed, "exit": code, "false": false})
        found = Probe(version, tuple(codes), tuple(runs))
        print(f"bisect: {found.said()}", flush=True)
        return found

    done = search(versions, probe)
    (args.results / "bisect.json").write_text(json.dumps(done.as_json(args.checker), indent=2) + "\n")
    print(f"{done.summary()}; report: {args.results / 'bisect.json'}")
    return EXIT_VALID


def judged(run_dir: Path) -> dict[str, bool | None] | None:
    """Each checker's valid in a run's verdict (None: the run has none)."""
    try:
        verdict = json.loads((run_dir / "verdict.json").read_text())
    except (OSError, ValueError):
        return None
    return {name: result.get("valid") for name, result in verdict.get("checkers", {}).items()}


def in_range(name: str, text: str) -> list[str]:
    """The pinned releases from OLDEST to NEWEST, both named exactly."""
    from targets.releases import ordered

    declared = targets.get(name).releases
    if declared is None:
        raise UsageError(f"--versions: {name} has no releases but its own")
    oldest, dots, newest = text.partition("..")
    known = ordered(declared.pins())
    for end in (oldest, newest):
        if not dots or end not in known:
            raise UsageError(f"--versions {text}: name OLDEST..NEWEST of {name}'s releases: {', '.join(known)}")
    chosen = known[known.index(oldest) : known.index(newest) + 1]
    if len(chosen) < 2:
        raise UsageError(f"--versions {text}: the oldest must come before the newest")
    return chosen


def base_configs(source: Path) -> list:
    """The runs each version repeats: a campaign's matrix, or one run's settings and schedule."""
    if source.is_dir():
        from .runs import recorded_run

        return [recorded_run(source, None, quiet=True)]
    from harness.campaign import load

    _, planned = load(source)
    if len({plan.config.target for plan in planned}) != 1:  # a release the file names is replaced by each probed
        raise UsageError(f"{source}: bisect takes one target, and chooses its versions (no `versions` key)")
    return [plan.config for plan in planned]
