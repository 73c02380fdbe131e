"""`splitbrain simulate`: fault schedules over a target's simulation: a seeded campaign of random schedules, and its verdict."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from tqdm import tqdm

import targets
from harness import limits
from harness.limits import setting_type
from history.errors import UsageError
from results.wording import counted
from targets.interface import Simulated

from .arguments import add_target_options, given_options, path_arg
from .outcome import exit_code

if TYPE_CHECKING:
    from nemesis.simulated import NoveltySearch

NAME = "simulate"
HELP = "fault schedules over a simulated cluster of the reference quorum"


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--nodes", type=limits.SIM_NODES.parse, default=3, help="nodes in the simulated cluster")
    parser.add_argument("--schedules", type=limits.SCHEDULES.parse, default=200, help="schedules to run, one seed each")
    parser.add_argument("--steps", type=limits.STEPS.parse, default=20, help="fault and load steps per schedule")
    parser.add_argument("--seed", type=setting_type("seed"), default=0, help="the first schedule's seed")
    parser.add_argument("--keep-going", action="store_true", help="do not stop at the first violation")
    parser.add_argument(
        "--observers", type=limits.OBSERVERS.parse, default=0, help="replicas beyond the initial voters"
    )
    parser.add_argument("--membership", action="store_true", help="schedules also lose disks and add and remove voters")
    parser.add_argument(
        "--moments",
        action="store_true",
        help="random schedules also cut a leader off at a moment of the protocol: as it is elected, as it commits",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument(
        "--search",
        choices=("random", "novelty"),
        default="random",
        help="random schedules, or schedules the novelty search chooses as it goes (as `run --nemesis-strategy novelty`)",
    )
    parser.add_argument(
        "--memory",
        type=path_arg,
        metavar="FILE",
        help="what the novelty search learned: read at the start, written at the end (a campaign's novelty.json)",
    )
    parser.add_argument(
        "--write-schedules",
        type=path_arg,
        metavar="DIR",
        help="write each failing schedule as DIR/sim-SEED/, a run that `splitbrain replay` makes on a real cluster",
    )
    parser.add_argument(
        "--spark",
        metavar="MASTER",
        help="split the seeds across Spark tasks on this master (local[N], spark://HOST:PORT, ...); random search only",
    )
    add_target_options(parser)


def command(args: argparse.Namespace) -> int:
    """A seeded campaign of random fault schedules over the target's simulation."""
    target = targets.get(args.target)
    settings = {**given_options(args), "nodes": args.nodes, "observers": args.observers}

    def bar(items):
        return tqdm(items, desc="schedules", unit="run", disable=args.quiet)

    if not isinstance(target, Simulated):
        raise UsageError(f"--target: {target.name} has no simulator")
    refuse_bad_combinations(args)
    if args.spark is None:
        search = searching(args)
        verdict = target.simulate(
            settings, args.schedules, args.steps, args.seed, args.membership, args.keep_going, bar, search, args.moments
        )
        if search is not None and args.memory is not None:  # what it learned, for the next campaign or run
            search.memory.write(args.memory)
    else:
        verdict = on_spark(args, target.name, settings)
    json.dump(verdict, sys.stdout, indent=2)
    print()
    print(simulation_summary(verdict), file=sys.stderr)  # stdout stays one JSON document
    if args.write_schedules:
        from harness import sim_schedules

        for run_dir in sim_schedules.write(args.write_schedules, target, settings, given_options(args), verdict):
            print(f"schedule: {run_dir} (splitbrain replay {run_dir}{sim_schedules.held(run_dir)})", file=sys.stderr)
    return exit_code(verdict)


def searching(args: argparse.Namespace) -> NoveltySearch | None:
    """The strategy that chooses the schedules' faults as they go (`--search
    novelty`, from what `--memory` holds), or None: random steps."""
    if args.search != "novelty":
        return None
    from nemesis.novelty import Memory
    from nemesis.simulated import NoveltySearch

    return NoveltySearch(Memory.read(args.memory))


def refuse_bad_combinations(args: argparse.Namespace) -> None:
    """Options that cannot go together, and files that cannot be written, refused before any schedule runs."""
    if args.memory is not None and args.search != "novelty":
        raise UsageError("--memory: only the novelty search learns (--search novelty)")
    if args.search == "novelty" and args.membership:
        raise UsageError("--membership: the novelty search makes no voter changes in the simulation")
    if args.search == "novelty" and args.moments:
        raise UsageError("--moments: random schedules arm them; the novelty search times its faults by what it sees")
    if args.spark is not None:
        from results.spark_session import master_problem

        problem = master_problem(args.spark)
        if problem:
            raise UsageError(f"--spark {args.spark}: {problem}")
        if args.search != "random":
            raise UsageError("--spark: the novelty search learns schedule by schedule, in order: it runs here")
    if args.write_schedules is not None:
        try:  # before the schedules run, not after
            args.write_schedules.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise UsageError(f"--write-schedules {args.write_schedules}: cannot make it: {error.strerror}") from None
    if args.memory is not None:
        from nemesis.novelty import Memory

        if not args.memory.parent.is_dir():  # it is written at the end: refuse now, not after the schedules
            raise UsageError(f"--memory {args.memory}: no folder {args.memory.parent} to write it in")
        try:
            Memory.read(args.memory)
        except (OSError, ValueError, KeyError, TypeError) as error:
            raise UsageError(
                f"--memory {args.memory}: not a novelty memory file ({type(error).__name__}: {error})"
            ) from None


def simulation_summary(verdict: dict) -> str:
    """`simulate`'s verdict in one line, as `run` ends: how many schedules, and the first violation with its seed."""
    result = verdict["checkers"]["simulation-invariants"]
    schedules = counted(result["stats"].get("schedules", 0), "schedule")
    anomalies = result.get("anomalies") or []
    first = ""
    if anomalies:
        found = anomalies[0]
        steps = f", shrunk to {len(found['shrunk'])} of {len(found['steps'])} steps" if "shrunk" in found else ""
        first = f"; first: {found.get('violation')} (seed {found.get('seed')}{steps})"
    return f"valid: {verdict['valid']}  ({schedules}, {counted(len(anomalies), 'violation')}{first})"


def on_spark(args: argparse.Namespace, target: str, settings: dict) -> dict:
    """The schedules on Spark (harness/spark_simulation.py), with a progress bar as here."""
    from harness import spark_simulation

    with tqdm(total=args.schedules, desc="schedules", unit="run", disable=args.quiet) as bar:

        def progress(done: int, total: int) -> None:
            bar.update(done - bar.n)

        return spark_simulation.simulate(
            args.spark,
            target,
            settings,
            args.schedules,
            args.steps,
            args.seed,
            args.membership,
            args.keep_going,
            progress,
            moments=args.moments,
        )
