"""What `--stop-on-violation` saves (issue "hours of load"): the planted-bug
find-rate benchmark's runs (benchmarks/guided_find_rate.py: each bug with
only `--bug` and the settings it needs), each seed run twice in the same
sitting, once to its time limit and once with `--stop-on-violation`.

Prints a row per run (caught by the bug's checkers or not, wall time, when
load stopped), then per bug the runs caught each way and the mean wall time
of the failing runs, and over all bugs the mean wall time per failing run
each way. The goal: at least 40% less with `--stop-on-violation`, and every
bug caught as often (a run that stops early must still be decided false by
the batch checkers, which read the nodes' logs and final copies too).

    .venv/bin/python benchmarks/stop_on_violation.py [--bugs ...] [--seeds 1 2 3] [--time-limit 60]
        [--backend local|docker] [--nodes 5] [--strategy guided]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from guided_find_rate import BUGS, first_catch_s, run  # noqa: E402

GOAL_FALL = 0.40
WAYS = {"to the limit": (), "stop on violation": ("--stop-on-violation",)}


def one(results: Path, bug: str, seed: int, args: argparse.Namespace, extra: tuple[str, ...]) -> dict:
    """A run's outcome: caught, wall time, when load stopped (None: at its limit)."""
    began = time.monotonic()
    run_dir = run(results, bug, args.strategy, seed, args, *extra)
    wall_s = time.monotonic() - began
    if not (run_dir / "verdict.json").exists():
        return {"caught": None, "wall_s": wall_s, "stopped_s": None, "dir": run_dir}
    meta = json.loads((run_dir / "run.json").read_text())
    stopped = meta.get("stopped_load_at_s")
    return {
        "caught": first_catch_s(run_dir, BUGS[bug][1]) is not None,
        "wall_s": wall_s,
        "stopped_s": None if stopped is None else stopped - meta["load_start_s"],
        "dir": run_dir,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bugs", nargs="+", default=list(BUGS), choices=list(BUGS))
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--time-limit", type=int, default=60)
    parser.add_argument("--backend", default="local", choices=["docker", "local"])
    parser.add_argument("--nodes", type=int, default=5)
    parser.add_argument("--strategy", default="guided", choices=["random", "guided", "novelty"])
    args = parser.parse_args()
    args.nemesis = None  # the strategy's default set, as guided_find_rate.py's runs
    results = Path(tempfile.mkdtemp(prefix="splitbrain-stop-"))
    print("| bug | seed | way | caught | wall (s) | load stopped at (s) |")
    print("|---|---|---|---|---|---|")
    outcomes: dict[tuple[str, str], list[dict]] = {}
    for bug in args.bugs:
        for seed in args.seeds:
            for way, extra in WAYS.items():
                found = one(results, bug, seed, args, extra)
                outcomes.setdefault((bug, way), []).append(found)
                stopped = "" if found["stopped_s"] is None else f"{found['stopped_s']:.1f}"
                print(f"| {bug} | {seed} | {way} | {found['caught']} | {found['wall_s']:.1f} | {stopped} |", flush=True)
    print("\n| bug | way | caught | mean wall per failing run (s) |")
    print("|---|---|---|---|")
    failing: dict[str, list[float]] = {way: [] for way in WAYS}
    for (bug, way), rows in outcomes.items():
        walls = [row["wall_s"] for row in rows if row["caught"]]
        failing[way] += walls
        mean = f"{statistics.mean(walls):.1f}" if walls else "-"
        print(f"| {bug} | {way} | {len(walls)} of {len(rows)} | {mean} |")
    full, stopped = (statistics.mean(failing[way]) if failing[way] else float("nan") for way in WAYS)
    fall = 1 - stopped / full
    caught_full, caught_stopped = (len(failing[way]) for way in WAYS)
    print(
        f"\nmean wall per failing run: {full:.1f} s to the limit, {stopped:.1f} s stopping on violation: "
        f"{fall:.0%} less (goal at least {GOAL_FALL:.0%}); failing runs {caught_full} and {caught_stopped}"
    )
    print(f"runs in {results}")
    return 0 if fall >= GOAL_FALL and caught_stopped >= caught_full else 1


if __name__ == "__main__":
    sys.exit(main())
