"""The mutation score (issue 39): `splitbrain mutate` on the reference
quorum, every mutant run for real under each strategy with the same budget
(the main job's settings: local, 3 nodes, append, 30 s; one run, seed 1),
also where the simulation already caught it (`--real-for-all`), so the
strategies are compared on the same mutants. Printed: each mutant and who
caught it, and each strategy's score over the mutants that count (neither
equivalent nor stillborn, by the rules of harness/mutation.py), by its real
runs alone and with the simulation first (a mutant the simulation caught
counts for every strategy, as `splitbrain mutate` scores by default), and
over the mutants whose change ran in some run (harness/reach.py). The goals:
the new default at least 60%, and at least 1.5x today's guided.

`--runs N --simulation-first` asks what a larger budget would add: N real
runs per strategy, only for the mutants the simulation missed (the
survivors of one run are what more runs could still catch).

`--nemesis LIST` names the faults every real run draws from (as `run
--nemesis`): the default guided set plus the message faults asks what one
message as the unit of fault adds (issue 73).

`--policy FILE` judges every real run against a release gate's policy as
well (`mutate --policy`: the original's runs must keep it), as
`benchmarks/stuck-gate.toml` bounds how long a run stood stuck.

    .venv/bin/python benchmarks/mutation_score.py [--mutants 20] [--seed 1] [--strategies random,guided,novelty]
        [--runs 1] [--simulation-first] [--policy benchmarks/stuck-gate.toml] [--nemesis LIST]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mutants", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--strategies", default="random,guided,novelty")
    parser.add_argument("--time-limit", type=int, default=30)
    parser.add_argument("--runs", type=int, default=1, help="real runs per mutant and strategy")
    parser.add_argument(
        "--simulation-first", action="store_true", help="real runs only where the simulation missed the mutant"
    )
    parser.add_argument("--policy", type=Path, help="a gate policy a mutant's run may also break")
    parser.add_argument("--nemesis", help="the faults each real run draws from (default: the run's)")
    args = parser.parse_args()
    results = Path(tempfile.mkdtemp(prefix="splitbrain-mutation-"))
    command = [sys.executable, "-m", "harness.cli", "mutate", "--mutants", str(args.mutants), "--seed", str(args.seed)]
    command += ["--strategies", args.strategies, "--time-limit", str(args.time_limit), "--runs", str(args.runs)]
    command += [] if args.simulation_first else ["--real-for-all"]
    command += [] if args.policy is None else ["--policy", str(args.policy.resolve())]
    command += [] if args.nemesis is None else ["--nemesis", args.nemesis]
    done = subprocess.run([*command, "--results", str(results), "--quiet"], cwd=ROOT, capture_output=True, text=True)
    print(done.stdout, end="")
    if done.returncode != 0:
        print(done.stderr, file=sys.stderr)
        return 2
    report = json.loads((results / "mutation.json").read_text())
    score = report["score"]
    print("\nscore:", percents(score))
    if "novelty" in score and "guided" in score and score["novelty"] is not None:
        ratio = score["novelty"] / score["guided"] if score["guided"] else float("inf")
        print(f"novelty {score['novelty']:.0%} (goal: at least 60%), {ratio:.2f}x guided (goal: at least 1.5x)")
    print("with the simulation first (as `splitbrain mutate` scores without --real-for-all):", end=" ")
    print(percents(report["score_with_simulation"]))
    print(f"over the mutants whose change ran ({report['unreached']} never ran theirs):", end=" ")
    print(percents(report["score_reached"]))
    print(f"report: {results / 'mutation.json'}")
    return 0


def percents(scores: dict[str, float | None]) -> str:
    """Each strategy's score as a percentage, where it has one."""
    return ", ".join(f"{s} {v:.0%}" for s, v in scores.items() if v is not None)


if __name__ == "__main__":
    sys.exit(main())
