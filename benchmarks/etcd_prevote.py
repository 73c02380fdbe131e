"""KIP-996 on etcd 3.4: runs the campaign `examples/etcd-prevote.toml`
(rejoining follower and flip-flop, with and without --pre-vote, 5 seeds
each, 5 Docker nodes) and prints, per option set and per run, the
disruptive elections and the leaderless time the availability checker
measured, as the Markdown table docs/benchmarks.md shows.

    .venv/bin/python benchmarks/etcd_prevote.py [--results DIR]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CAMPAIGN = ROOT / "examples" / "etcd-prevote.toml"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, help="campaign results folder (default: a new temporary one)")
    args = parser.parse_args()
    results = args.results or Path(tempfile.mkdtemp(prefix="splitbrain-etcd-prevote-"))
    done = subprocess.run(
        [sys.executable, "-m", "harness.cli", "campaign", "--quiet", "--results", str(results), str(CAMPAIGN)], cwd=ROOT
    )
    if done.returncode not in (0, 1):
        return done.returncode
    folder = results / "etcd-prevote"
    planned = json.loads((folder / "campaign.json").read_text())["runs"]
    print("| option set | seed | valid | leader elections | disruptive elections | leaderless ms |")
    print("|---|---|---|---|---|---|")
    totals: dict[str, list[tuple[int, float]]] = {}
    for run in planned:
        verdict = json.loads((folder / run["run_id"] / "verdict.json").read_text())
        stats = verdict["checkers"]["availability"]["stats"]
        seed = run["run_id"].rsplit("-s", 1)[1].split("-")[0]
        print(
            f"| {run['target']} | {seed} | {verdict['valid']} | {stats['leader_elections']} | "
            f"{stats['disruptive_elections']} | {stats['leaderless_ms']:.0f} |"
        )
        totals.setdefault(run["target"], []).append((stats["disruptive_elections"], stats["leaderless_ms"]))
    print()
    print("| option set | runs | runs with disruptive elections | disruptive elections (mean) | leaderless ms (mean) |")
    print("|---|---|---|---|---|")
    for name, figures in totals.items():
        runs = len(figures)
        print(
            f"| {name} | {runs} | {sum(1 for d, _ in figures if d)} | {sum(d for d, _ in figures) / runs:.1f} | "
            f"{sum(ms for _, ms in figures) / runs:.0f} |"
        )
    print(f"\ncampaign folder: {folder}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
