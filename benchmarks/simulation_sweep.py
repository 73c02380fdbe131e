"""Every mutant of the reference quorum's core by the operators named, judged by the
simulation alone: `splitbrain mutate`'s first stage (5 nodes, `--schedules`
schedules without voter changes and as many with them, the same seed for
each mutant), by its rules: caught (an invariant broken), equivalent (what
the simulation did is the original's, by its digest), missed, hung (20
times the original's time, at least 60 s) or crashed. `splitbrain mutate`
draws 16 or 20 mutants and runs them for real too; this takes the whole
population of each operator, cheap since no real cluster runs, so a share
per operator is measured rather than guessed from a few. Printed: each
missed mutant, then per operator the counts and the simulation's share of
the mutants that are not equivalent (caught, crashed and hung all count:
`Outcome.caught_by_simulation`, as `splitbrain mutate` counts them).

    .venv/bin/python benchmarks/simulation_sweep.py [--operators drop-clause,drop-guard] [--schedules 30] [--seed 1]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import targets  # noqa: E402
from harness.mutants import OPERATORS, Mutant, mutants  # noqa: E402
from harness.mutation import Outcome, copy_project, hung_after_s, simulated, simulation_verdict  # noqa: E402

TARGET = "kraft"  # the reference quorum, whose core the simulation runs


def judged(mutant: Mutant, number: int, work: Path, baseline: str, hung_s: float, args: argparse.Namespace) -> Outcome:
    """The mutant's outcome by the simulation alone, as `splitbrain mutate`'s first stage judges it."""
    copy = copy_project(work / f"m{number}")
    (copy / mutant.path).write_text(mutant.source)
    verdict, digest = simulated(copy, TARGET, args.schedules, args.seed, hung_s)
    shutil.rmtree(copy)
    return Outcome(mutant.name, mutant.describe(), True, simulation_verdict(verdict, digest, baseline))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--operators", default="drop-clause", help=f"comma-separated, of {', '.join(OPERATORS)}")
    parser.add_argument("--schedules", type=int, default=30, help="simulated schedules per mutant (and variant)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    operators = args.operators.split(",")
    if not set(operators) <= set(OPERATORS):
        print(f"simulation_sweep: --operators: {args.operators!r}: each one of {', '.join(OPERATORS)}", file=sys.stderr)
        return 2
    # Only the files the simulation runs: a change elsewhere it can neither catch nor tell apart.
    simulated_sources = [path for path, runs in targets.get(TARGET).mutation_sources().items() if runs]
    found = [
        m for path in simulated_sources for m in mutants(path, (ROOT / path).read_text()) if m.operator in operators
    ]
    with tempfile.TemporaryDirectory(prefix="simulation-sweep-") as folder:
        work = Path(folder)
        started = time.monotonic()
        baseline = simulated(copy_project(work / "original"), TARGET, args.schedules, args.seed)[1]
        judge = partial(
            judged, work=work, baseline=baseline, hung_s=hung_after_s(time.monotonic() - started), args=args
        )
        with ThreadPoolExecutor(2) as pool:  # a simulation a core
            outcomes = list(pool.map(judge, found, range(len(found))))
    for outcome in outcomes:
        if outcome.simulation == "missed":
            print(f"missed  {outcome.change[:160]}")
    for operator in operators:
        mine = [o for o, m in zip(outcomes, found, strict=True) if m.operator == operator]
        kinds = Counter(o.simulation.split(":")[0] for o in mine)
        counted = [o for o in mine if not o.equivalent]
        caught = sum(o.caught_by_simulation for o in counted)
        share = f"{caught / len(counted):.0%}" if counted else "-"
        print(
            f"{operator}: {len(mine)} mutants, {kinds['equivalent']} equivalent; of the {len(counted)} "
            f"others the simulation caught {caught} ({share}: an invariant broken {kinds['caught']}, raised "
            f"{kinds['crashed']}, hung {kinds['hung']}), missed {kinds['missed']} "
            f"({args.schedules} schedules, seed {args.seed})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
