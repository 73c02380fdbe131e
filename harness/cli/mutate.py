"""`splitbrain mutate`: the harness's own power, measured: mutants of the target's code, each simulated and then run for real under each strategy, and the share the checkers catch."""

from __future__ import annotations

import argparse
from pathlib import Path

from tqdm import tqdm

import targets
from harness import limits
from history.errors import UsageError
from history.faults import KINDS
from nemesis import STRATEGIES

from .arguments import path_arg, writable_folder
from .outcome import EXIT_INVALID, EXIT_VALID

NAME = "mutate"
HELP = "mutants of the target's code, each simulated, then run for real per strategy: the share caught"
# A mutant's line shows this much of its change (a dropped guard can run to many lines).
CHANGE_SHOWN = 160


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--target", default=targets.DEFAULT, choices=targets.names(), help="whose code to mutate")
    parser.add_argument("--mutants", type=limits.MUTANTS.parse, default=12, help="how many mutants, drawn by --seed")
    parser.add_argument(
        "--seed", type=limits.RUN_SETTINGS["seed"].parse, default=1, help="draws the mutants; the first schedule's seed"
    )
    parser.add_argument("--schedules", type=limits.SCHEDULES.parse, default=30, help="simulated schedules per mutant")
    parser.add_argument(
        "--strategies", default="random,guided,novelty", help=f"comma-separated, of {','.join(STRATEGIES)}"
    )
    parser.add_argument(
        "--nemesis", help="comma-separated faults each real run draws from (as `run --nemesis`); default: run's"
    )
    parser.add_argument("--runs", type=limits.REPEAT.parse, default=1, help="real runs per mutant and strategy")
    parser.add_argument("--time-limit", type=limits.MUTANT_RUN_S.parse, default=30, help="seconds of each real run")
    parser.add_argument("--real-for-all", action="store_true", help="real runs also for mutants the simulation caught")
    parser.add_argument(
        "--policy",
        type=path_arg,
        help="a release gate's policy (as `gate --policy`): a real run that breaks it catches its mutant too; "
        "the original's runs must keep it",
    )
    parser.add_argument("--results", type=path_arg, default=Path("runs/mutation"), help="where runs and the report go")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def command(args: argparse.Namespace) -> int:
    """Exit 0 once every mutant is judged: the score is a measurement, not a verdict."""
    from harness.mutation import Settings, mutate

    strategies = tuple(s.strip() for s in args.strategies.split(",") if s.strip())
    wrong = [s for s in strategies if s not in STRATEGIES]
    if wrong or not strategies:
        raise UsageError(f"--strategies: {', '.join(wrong) or 'none'}: choose from {', '.join(STRATEGIES)}")
    twice = limits.named_twice(list(strategies))
    if twice:
        raise UsageError(f"--strategies: {', '.join(twice)} given twice")
    nemesis = tuple(k.strip() for k in (args.nemesis or "").split(",") if k.strip())
    unknown = [k for k in nemesis if k not in KINDS]
    if unknown or (args.nemesis is not None and not nemesis):
        raise UsageError(f"--nemesis: {', '.join(unknown) or 'none'}: choose from {', '.join(KINDS)}")
    if args.policy is not None:
        from results.gate import load_policy

        load_policy(args.policy)  # a policy that cannot be read is refused before anything is made
    writable_folder(args.results, "--results")
    settings = Settings(
        args.target,
        args.mutants,
        args.seed,
        args.schedules,
        strategies,
        args.runs,
        args.time_limit,
        args.real_for_all,
        None if args.policy is None else str(args.policy),
        nemesis,
    )
    report = mutate(
        settings, args.results, lambda items: tqdm(items, desc="mutants", unit="mutant", disable=args.quiet)
    )
    for outcome in report["outcomes"]:
        print(one(outcome))
    for line in by_file_and_operator(report):
        print(f"mutate: {line}")
    print(f"mutate: {scores(report)}; report: {args.results / 'mutation.json'}")
    print(f"mutate: {score_line(report)}")
    return EXIT_VALID


def by_file_and_operator(report: dict) -> list[str]:
    """One line per mutated file and operator: of the mutants that count, how
    many the simulation caught and how many each strategy's real runs did."""
    return [
        f"{path} {operator}: "
        + ", ".join(f"{who} {n}" for who, n in cell.items() if who != "counted")
        + f" of {cell['counted']}"
        for path, operators in sorted(report["by_file_and_operator"].items())
        for operator, cell in sorted(operators.items())
    ]


def score_line(report: dict) -> str:
    """Each strategy's score, saying what it counts (printed once as bare JSON, `{"guided": 0.0}`
    read as "nothing caught" where the simulation, left out under --real-for-all, caught them)."""
    real_for_all = report["settings"]["real_for_all"]
    counts = "its real runs alone (--real-for-all)" if real_for_all else "its real runs, or the simulation first"
    shares = ", ".join(f"{s} {share:.0%}" for s, share in report["score"].items())
    with_simulation = ", ".join(f"{s} {share:.0%}" for s, share in report["score_with_simulation"].items())
    line = f"score, caught by {counts}, of {report['counted']} counted: {shares}"
    return line + (f"; with the simulation first: {with_simulation}" if real_for_all else "")


def scores(report: dict) -> str:
    """The mutants, those set apart, and each strategy's catch."""
    caught = ", ".join(f"{s} {n} of {report['counted']}" for s, n in report["caught"].items())
    return (
        f"{report['mutants']} mutants, {report['equivalent']} equivalent, {report['stillborn']} stillborn; "
        f"caught: {caught} (the simulation alone {report['caught_by_simulation']}); "
        f"{report['unreached']} of those counted never ran their change"
    )


def one(outcome: dict) -> str:
    """A mutant's line: what changed, and who caught it."""
    by = ["simulation"] if outcome["caught_by_simulation"] else []
    by += [f"{s} (the policy)" if EXIT_INVALID not in outcome["runs"].get(s, []) else s for s in outcome["caught_by"]]
    if outcome["equivalent"]:
        verdict = "equivalent"
    elif outcome["stillborn"]:
        verdict = "stillborn"
    elif by:
        verdict = f"caught by {', '.join(by)}"
    elif outcome["unreached"]:
        verdict = "SURVIVED (its change never ran)"
    else:
        verdict = "SURVIVED"
    return f"{verdict:<32} {outcome['change'][:CHANGE_SHOWN]}"
