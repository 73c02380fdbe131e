"""Find rate, random against guided: each planted bug under `splitbrain run
--backend docker --nodes 5` with the strategy's default nemesis set and only
`--bug NAME` (the register workload for `stale-read`; `membership` added to
the set for the membership bugs), 60 s runs over the given seeds, once with
`--nemesis-strategy random` and once with `guided`. `ignore-generation`
loses data only where followers fsync late: it runs with
`--flush-interval-ms 200` (a deployment's choice, not a fault), and nothing
of `examples/ignore-generation.toml`'s schedule. `--nemesis` replaces the
strategy's default fault set (as `stale-read` under `partition,kill,pause`);
`--run-args` adds run options after the bug's own settings (a longer
`--flush-interval-ms`, say).

Prints a row per run (caught by the bug's checker or not, the time of the
first anomaly it names after the load began, coverage cells hit), then per bug and strategy: runs
caught, the median time to the first catch, and cells hit on average. The
goals (issue "guided faults"): guided catches each bug in at least 2 of 3
runs, with the median time to the first catch at least 2x shorter than
random's, and hits more cells.

    .venv/bin/python benchmarks/guided_find_rate.py [--bugs ...] [--seeds 1 2 3 4 5] [--time-limit 60]
        [--strategies random guided novelty novelty-priors] [--backend docker|local] [--nodes 5]
        [--nemesis partition,kill,pause] [--run-args '--flush-interval-ms 10000']
"""

from __future__ import annotations

import argparse
import json
import shlex
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The bug, the workload that shows it, the checkers it exists for.
BUGS = {
    "ack-before-commit": ("append", {"committed-data-loss"}),
    "stale-read": ("register", {"linearizable"}),
    "forget-vote": ("append", {"election-safety", "single-leader-per-epoch"}),
    "prevote-always": ("append", {"election-safety"}),
    "ack-before-fsync": ("append", {"committed-data-loss"}),
    "multi-voter-change": ("append", {"membership"}),
    "ignore-directory-id": ("append", {"membership"}),
    "ack-voter-early": ("append", {"membership"}),
    "ignore-generation": ("append", {"committed-data-loss"}),
}
# The target settings a bug needs to be there at all.
SETTINGS = {"ignore-generation": ["--flush-interval-ms", "200"]}
MEMBERSHIP_BUGS = {"multi-voter-change", "ignore-directory-id", "ack-voter-early"}


def faults(bug: str, strategy: str, backend: str, nodes: int) -> list[str]:
    """The strategy's default set (as `splitbrain run` resolves it), and `membership` for the membership bugs."""
    sys.path.insert(0, str(ROOT))
    from harness.run import RunConfig

    kinds = RunConfig(backend=backend, nodes=nodes, nemesis_strategy=strategy).nemesis
    return kinds + ["membership"] if bug in MEMBERSHIP_BUGS else kinds


def run(results: Path, bug: str, strategy: str, seed: int, args: argparse.Namespace, *extra: str) -> Path:
    """One run of `bug`; `extra`: more of `splitbrain run`'s options."""
    workload, _ = BUGS[bug]
    command = [
        sys.executable,
        "-m",
        "harness.cli",
        "run",
        "--backend",
        args.backend,
        "--nodes",
        str(args.nodes),
        "--bug",
        bug,
        "--workload",
        workload,
        "--nemesis-strategy",
        strategy,
        "--time-limit",
        str(args.time_limit),
        "--quiet",
        "--results",
        str(results),
        "--seed",
        str(seed),
    ]
    if args.nemesis:
        command += ["--nemesis", args.nemesis]
    elif bug in MEMBERSHIP_BUGS:
        command += ["--nemesis", ",".join(faults(bug, strategy, args.backend, args.nodes))]
    command += [*SETTINGS.get(bug, []), *extra]
    before = set(results.iterdir())
    subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    [run_dir] = set(results.iterdir()) - before
    return run_dir


def first_catch_s(run_dir: Path, checkers: set[str]) -> float | None:
    """When the first anomaly of the bug's checkers happened (its named history
    row, or its own time), in seconds after the load (and faults) began."""
    import pandas as pd

    verdict = json.loads((run_dir / "verdict.json").read_text())
    caught = [
        a
        for name in checkers
        for a in (verdict["checkers"].get(name) or {}).get("anomalies", [])
        if (verdict["checkers"][name].get("valid") is False)
    ]
    if not caught:
        return None
    history = pd.read_parquet(run_dir / "history.parquet", columns=["index", "time_ns"]).set_index("index")["time_ns"]
    times = []  # each anomaly's moment: when its evidence was complete (the last of the times it names)
    for anomaly in caught:
        if isinstance(anomaly.get("time_ns"), int):
            times.append(anomaly["time_ns"])
        elif isinstance(anomaly.get("index"), int) and anomaly["index"] in history.index:
            times.append(int(history[anomaly["index"]]))
        elif anomaly.get("times_ns"):
            times.append(max(int(t) for t in anomaly["times_ns"]))
    start_s = json.loads((run_dir / "run.json").read_text()).get("load_start_s", 0.0)
    return min(times) / 1e9 - start_s if times else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bugs", nargs="+", default=list(BUGS), choices=list(BUGS))
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3, 4, 5])
    parser.add_argument("--time-limit", type=int, default=60)
    parser.add_argument(
        "--strategies",
        nargs="+",
        default=["random", "guided"],
        choices=["random", "guided", "novelty", "novelty-priors"],
    )
    parser.add_argument("--backend", default="docker", choices=["docker", "local"])
    parser.add_argument("--nodes", type=int, default=5)
    parser.add_argument("--nemesis", help="the faults, in place of the strategy's default set")
    parser.add_argument(
        "--run-args",
        default="",
        help="more of `splitbrain run`'s options, after the bug's own settings (e.g. '--flush-interval-ms 10000')",
    )
    args = parser.parse_args()
    results = Path(tempfile.mkdtemp(prefix="splitbrain-guided-"))
    print("| bug | strategy | seed | caught | first catch (s) | cells hit |")
    print("|---|---|---|---|---|---|")
    table: dict[tuple[str, str], list] = {}
    for bug in args.bugs:
        for strategy in args.strategies:
            for seed in args.seeds:
                run_dir = run(results, bug, strategy, seed, args, *shlex.split(args.run_args))
                if not (run_dir / "verdict.json").exists():
                    print(f"| {bug} | {strategy} | {seed} | no verdict: see {run_dir} | | |", flush=True)
                    continue
                verdict = json.loads((run_dir / "verdict.json").read_text())
                when = first_catch_s(run_dir, BUGS[bug][1])
                cells = (verdict.get("coverage") or {}).get("hit", 0)
                table.setdefault((bug, strategy), []).append((when, cells))
                shown = "" if when is None else f"{when:.1f}"
                print(f"| {bug} | {strategy} | {seed} | {when is not None} | {shown} | {cells} |", flush=True)
    print("\n| bug | strategy | caught | median first catch (s) | mean cells hit |")
    print("|---|---|---|---|---|")
    for (bug, strategy), rows in table.items():
        catches = [when for when, _ in rows if when is not None]
        median = f"{statistics.median(catches):.1f}" if catches else "-"
        cells = statistics.mean(c for _, c in rows)
        print(f"| {bug} | {strategy} | {len(catches)} of {len(rows)} | {median} | {cells:.1f} |")
    print(f"\nruns in {results}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
