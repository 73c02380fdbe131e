"""How often README's bug examples find their bug: each example, run as
README gives it (`./scripts/run.sh ...`, a fresh seed each run), N times.
Prints each run's seed and verdict, then the find rate per example. The
goal: every example finds its bug in every run.

    .venv/bin/python benchmarks/readme_examples.py [--runs 5]
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.test_readme import bug_examples, run_example  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    results = Path(tempfile.mkdtemp(prefix="splitbrain-readme-"))
    print("| example | run | seed | exit | caught by its checker | seconds |")
    print("|---|---|---|---|---|---|")
    found = {}
    for command, bug, checker in bug_examples():
        found[bug] = 0
        for number in range(args.runs):
            started = time.monotonic()
            done = run_example(command, results / f"{bug}-{number}")
            seed = re.search(r"seed: (\d+)", done.stderr)
            caught = done.returncode == 1 and f"{checker}: False" in done.stdout
            found[bug] += caught
            print(
                f"| {bug} | {number + 1} | {seed[1] if seed else '?'} | {done.returncode} | {caught} | "
                f"{time.monotonic() - started:.0f} |",
                flush=True,
            )
    print()
    for bug, count in found.items():
        print(f"{bug}: found in {count} of {args.runs} runs (goal: {args.runs})")
    print(f"runs in {results}")
    return 0 if all(count == args.runs for count in found.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
