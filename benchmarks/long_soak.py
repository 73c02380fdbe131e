"""A soak of the reference quorum's correct node (issue "hours of load"):
`splitbrain soak` for `--seconds` (goal: an hour) at `--rate` (goal 2,000
operations a second), local backend, 3 nodes, guided faults throughout,
judged live. Then, from its soak.jsonl and verdicts: the rate answered,
the faults made, the live and batch verdicts (goal: valid), and whether
the harness's memory stayed flat (goal: its last quarter's median within
1.25x of its second quarter's, the first being warm-up), with each node's
memory beside it. The curves are in the run's soak.html (kept with --keep).

    .venv/bin/python benchmarks/long_soak.py [--seconds 3600] [--rate 2000] [--concurrency 200] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GOAL_RATE, GOAL_FLAT = 2000, 1.25


def quarter_median(samples: list[dict], quarter: int, value) -> float | None:
    """The median of `value` over the samples of one quarter (0 to 3) of the soak's time."""
    end = samples[-1]["elapsed_s"]
    chosen = [value(s) for s in samples if quarter * end / 4 <= s["elapsed_s"] <= (quarter + 1) * end / 4]
    chosen = [v for v in chosen if v is not None]
    return statistics.median(chosen) if chosen else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=3600)
    parser.add_argument("--rate", type=int, default=GOAL_RATE)
    parser.add_argument("--concurrency", type=int, default=200)
    parser.add_argument("--keep", type=Path, help="keep the run directory under this folder")
    args = parser.parse_args()
    results = args.keep or Path(tempfile.mkdtemp(prefix="splitbrain-soak-"))
    command = [
        sys.executable, "-m", "harness.cli", "soak", "--backend", "local", "--nodes", "3", "--workload", "append",
        "--rate", str(args.rate), "--concurrency", str(args.concurrency), "--time-limit", str(args.seconds),
        "--seed", "1", "--quiet", "--results", str(results),
    ]  # fmt: skip
    began = time.monotonic()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    wall_s = time.monotonic() - began
    run_dirs = [d for d in results.iterdir() if (d / "soak.jsonl").exists()]
    if not run_dirs:
        sys.exit(f"the soak left no soak.jsonl (exit {done.returncode}): {done.stderr.strip()[-500:]}")
    [run_dir] = run_dirs
    samples = [json.loads(line) for line in (run_dir / "soak.jsonl").read_text().splitlines()]
    live = json.loads((run_dir / "live.json").read_text())
    verdict_path = run_dir / "verdict.json"
    batch = json.loads(verdict_path.read_text())["valid"] if verdict_path.exists() else None
    last = samples[-1]
    print(
        f"reference quorum, append, local, 3 nodes, {args.concurrency} clients, --rate {args.rate}, guided faults, "
        f"{args.seconds} s: {last['operations']:,} operations answered ({last['ok'] / max(last['operations'], 1):.0%} ok), "
        f"{last['operations'] / last['elapsed_s']:,.0f} a second (goal {GOAL_RATE:,}); {last['faults']:,} faults; violations found live: {', '.join(last['violations']) or 'none'}"
    )
    print(
        f"live verdict {json.dumps(live['valid'])}, batch verdict {json.dumps(batch)} (goal true); exit {done.returncode}"
    )
    for name, value in [("harness", lambda s: s["harness_mib"])] + [
        (node, lambda s, node=node: s["nodes_mib"].get(node)) for node in sorted(last["nodes_mib"])
    ]:
        quarters = [quarter_median(samples, q, value) for q in range(4)]
        shown = ", ".join("-" if q is None else f"{q:,.0f}" for q in quarters)
        growth = quarters[3] / quarters[1] if quarters[1] and quarters[3] else None
        goal = f" (goal at most {GOAL_FLAT}x)" if name == "harness" else ""
        print(f"{name} memory, median MiB by quarter: {shown}; last quarter / second: {growth or 0:.2f}x{goal}")
    print(f"the whole soak {wall_s:.0f} s; its page: {run_dir / 'soak.html'}")
    if args.keep is None:
        shutil.rmtree(results, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
