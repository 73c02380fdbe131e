"""Abstract states reached (checkers/abstract_state.py), by strategy: the
same campaign of the correct reference quorum under the main job's defaults
(local, 3 nodes, 30 s, append, each strategy's default faults), seeds 1 to
10, once per strategy: `random`, `guided`, `novelty` (no risk tables, no
recipes) and `novelty-priors`. A novelty campaign learns across its runs,
as a campaign does. Printed: the distinct states and moves the campaign's
runs reached together, and the runs that were not valid (a false alarm on
the correct node). The goal (issue 39): novelty reaches at least 1.5x the
states guided does.

    .venv/bin/python benchmarks/state_novelty.py [--runs 10] [--time-limit 30] [--strategies ...]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from checkers.abstract_state import add_up_states  # noqa: E402
from nemesis import STRATEGIES  # noqa: E402

CAMPAIGN = """
[campaign]
name = "{strategy}"
results = "{results}"
backend = "local"
nodes = 3
time_limit_s = {time_limit}
nemesis_strategy = "{strategy}"
workloads = ["append"]
seeds = {seeds}

[targets.correct]
"""


def campaign(folder: Path, strategy: str, args: argparse.Namespace) -> tuple[dict, list]:
    path = folder / f"{strategy}.toml"
    seeds = list(range(1, args.runs + 1))
    path.write_text(CAMPAIGN.format(strategy=strategy, results=folder, time_limit=args.time_limit, seeds=seeds))
    subprocess.run(
        [sys.executable, "-m", "harness.cli", "campaign", "--quiet", str(path)], cwd=ROOT, capture_output=True
    )
    verdicts = [json.loads(p.read_text()) for p in sorted((folder / strategy).glob("*/verdict.json"))]
    return add_up_states(v.get("coverage") or {} for v in verdicts), verdicts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--time-limit", type=int, default=30)
    parser.add_argument("--strategies", nargs="+", default=list(STRATEGIES), choices=STRATEGIES)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="splitbrain-states-"))
    reached = {}
    for strategy in args.strategies:
        covered, verdicts = campaign(folder, strategy, args)
        reached[strategy] = covered
        per_run = [len((v.get("coverage") or {}).get("states") or {}) for v in verdicts]
        alarms = [v.get("valid") for v in verdicts if v.get("valid") is not True]
        print(
            f"{strategy}: {len(covered['states'])} states, {len(covered['transitions'])} moves in {len(verdicts)} runs "
            f"(per run {min(per_run, default=0)} to {max(per_run, default=0)}); runs not valid: {len(alarms)} {alarms}",
            flush=True,
        )
    if "guided" in reached and "novelty" in reached:
        ratio = len(reached["novelty"]["states"]) / max(len(reached["guided"]["states"]), 1)
        print(f"\nnovelty / guided states: {ratio:.2f} (goal: at least 1.5); campaigns in {folder}")
        return 0 if ratio >= 1.5 else 1
    print(f"\ncampaigns in {folder}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
