"""KIP-1186's figures on Docker: the `examples/kip1186.toml` campaign (auto-
joining observers, with and without AckWhenCommitted=true), then per target
the resignations, leader elections and leaderless time of each run, and how
long the slowest joiner took from its start to the voters record naming it.

    .venv/bin/python benchmarks/kip1186.py [--seeds 0,1,2]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import pandas as pd  # noqa: E402

from harness.campaign import load  # noqa: E402


def slowest_join_ms(run_dir: Path) -> float:
    """From a joiner's start event to the first voters event (on any node) that names it."""
    events = pd.read_parquet(run_dir / "events.parquet", columns=["time_ns", "node", "event", "voters"])
    starts = events[events["event"] == "start"].groupby("node")["time_ns"].min()
    changes = events[events["event"] == "voters"].sort_values("time_ns")
    initial = {node for node, _ in json.loads(changes["voters"].iloc[0])}
    first_named: dict[str, int] = {}
    for row in changes.itertuples():
        for node, _ in json.loads(row.voters):
            first_named.setdefault(node, row.time_ns)
    joins = [
        (first_named[node] - start) / 1e6
        for node, start in starts.items()
        if node not in initial and node in first_named
    ]
    return max(joins, default=float("nan"))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", default="0,1,2")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as workspace:
        config = Path(workspace) / "kip1186.toml"
        text = (ROOT / "examples" / "kip1186.toml").read_text()
        text = text.replace('results = "runs/campaigns"', f'results = "{workspace}"')
        text = text.replace("seeds = [0, 1, 2]", f"seeds = [{args.seeds}]")
        config.write_text(text)
        subprocess.run([sys.executable, "-m", "harness.cli", "campaign", str(config)], cwd=ROOT, check=False)
        folder, planned = load(config)
        print(
            f"{'target':32} {'run':>4} {'resignations':>13} {'elections':>10} {'leaderless ms':>14} {'ok rate':>8} {'join ms':>8}"
        )
        for plan in planned:
            stats = json.loads((folder / plan.run_id / "verdict.json").read_text())["checkers"]["availability"]["stats"]
            windows = stats["clients"].values()
            operations = sum(w["operations"] for w in windows)
            ok_rate = sum(w["ok_rate"] * w["operations"] for w in windows) / operations if operations else float("nan")
            print(
                f"{plan.target:32} {plan.config.seed:>4} {stats['resignations']:>13} {stats['leader_elections']:>10}"
                f" {stats['leaderless_ms']:>14} {ok_rate:>8.4f} {slowest_join_ms(folder / plan.run_id):>8.0f}"
            )


if __name__ == "__main__":
    main()
