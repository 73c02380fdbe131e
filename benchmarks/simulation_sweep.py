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
the mutants that are not equivalent (caught, crashed and hung all count, as
`splitbrain mutate` counts them).

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
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import targets  # noqa: E402
from harness.mutants import OPERATORS, Mutant, mutants  # noqa: E402
from harness.mutation import HUNG_MIN_S, HUNG_TIMES, copy_project, simulated  # noqa: E402

TARGET = "kraft"  # the reference quorum, whose core the simulation runs


def judged(mutant: Mutant, number: int, work: Path, baseline: str, hung_s: float, args: argparse.Namespace) -> str:
    copy = copy_project(work / f"m{number}")
    (copy / mutant.path).write_text(mutant.source)
    verdict, digest = simulated(copy, TARGET, args.schedules, args.seed, hung_s)
    shutil.rmtree(copy)
    return "equivalent" if verdict == "missed" and digest == baseline else verdict.split(":")[0]


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
        hung_s = max(HUNG_MIN_S, HUNG_TIMES * (time.monotonic() - started))
        with ThreadPoolExecutor(2) as pool:  # a simulation a core
            verdicts = list(
                pool.map(lambda job: judged(job[1], job[0], work, baseline, hung_s, args), enumerate(found))
            )
    for mutant, verdict in zip(found, verdicts, strict=True):
        if verdict == "missed":
            print(f"missed  {mutant.describe()[:160]}")
    for operator in operators:
        counts = Counter(v for m, v in zip(found, verdicts, strict=True) if m.operator == operator)
        counted = sum(counts.values()) - counts["equivalent"]
        caught = counts["caught"] + counts["crashed"] + counts["hung"]  # as `mutate` counts the simulation's catch
        share = f"{caught / counted:.0%}" if counted else "-"
        print(
            f"{operator}: {sum(counts.values())} mutants, {counts['equivalent']} equivalent; of the {counted} "
            f"others the simulation caught {caught} ({share}: an invariant broken {counts['caught']}, raised "
            f"{counts['crashed']}, hung {counts['hung']}), missed {counts['missed']} "
            f"({args.schedules} schedules, seed {args.seed})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
