"""The `splitbrain` command. Exit codes everywhere: 0 valid, 1 invalid, 2 unknown or error."""

from __future__ import annotations

import argparse
import json
import random
import sys

from tqdm import tqdm

from targets.kraft.core import BUGS

EXIT_VALID, EXIT_INVALID, EXIT_ERROR = 0, 1, 2


def add_quorum_options(parser: argparse.ArgumentParser) -> None:
    """Options of the reference quorum that campaigns vary."""
    parser.add_argument("--no-pre-vote", dest="pre_vote", action="store_false", help="disable KIP-996 Pre-Vote")
    parser.add_argument(
        "--no-check-quorum", dest="check_quorum", action="store_false", help="leaders never resign on lost fetches"
    )
    parser.add_argument("--bug", action="append", default=[], choices=sorted(BUGS), help="plant a bug (repeatable)")


def cmd_simulate(args: argparse.Namespace) -> int:
    """A seeded campaign of random fault schedules over the simulated cluster."""
    from targets.kraft.invariants import InvariantViolation
    from targets.kraft.simulation import SimSettings, random_steps, run_schedule

    anomalies = []
    ran = 0
    for offset in tqdm(range(args.schedules), desc="schedules", unit="run", disable=args.quiet):
        seed = args.seed + offset
        steps = random_steps(random.Random(seed), args.steps)
        settings = SimSettings(
            nodes=args.nodes,
            seed=seed,
            pre_vote=args.pre_vote,
            check_quorum=args.check_quorum,
            bugs=frozenset(args.bug),
        )
        ran += 1
        try:
            run_schedule(settings, steps)
        except InvariantViolation as violation:
            anomalies.append({"seed": seed, "violation": str(violation), "steps": steps})
            if not args.keep_going:
                break
    verdict = {
        "valid": not anomalies,
        "checkers": {
            "simulation-invariants": {
                "valid": not anomalies,
                "anomalies": anomalies,
                "stats": {"schedules": ran, "nodes": args.nodes, "bugs": args.bug},
            }
        },
    }
    json.dump(verdict, sys.stdout, indent=2)
    print()
    return EXIT_VALID if not anomalies else EXIT_INVALID


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="splitbrain", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    simulate = commands.add_parser("simulate", help="fault schedules over a simulated cluster of the reference quorum")
    simulate.add_argument("--nodes", type=int, default=3)
    simulate.add_argument("--schedules", type=int, default=200)
    simulate.add_argument("--steps", type=int, default=20, help="fault and load steps per schedule")
    simulate.add_argument("--seed", type=int, default=0)
    simulate.add_argument("--keep-going", action="store_true", help="do not stop at the first violation")
    simulate.add_argument("--quiet", action="store_true", help="no progress bar")
    add_quorum_options(simulate)
    simulate.set_defaults(func=cmd_simulate)
    commands.add_parser("node", help="run one reference quorum node (see `splitbrain node --help`)", add_help=False)
    commands.add_parser("toxiproxy", help="serve the Toxiproxy-compatible link proxy API", add_help=False)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["node"]:
        from targets.kraft import node

        return node.main(argv[1:])
    if argv[:1] == ["toxiproxy"]:
        from harness.toxiproxy import server

        return server.main(argv[1:])
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except KeyboardInterrupt:
        print("splitbrain: interrupted", file=sys.stderr)
        return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
