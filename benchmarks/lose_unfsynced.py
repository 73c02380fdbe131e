"""What the lose-unfsynced fault adds: `examples/lose-unfsynced.toml` (the
planted bug ack-before-fsync under one schedule aimed by role, with the
leader's crash a power loss or a plain kill, and the correct node under the
power loss) over the given seeds. Prints each run's committed-data-loss
verdict, then per target how many runs were caught. The goal (issue "KIP-380
with disk and clock faults"): caught under the power loss, missed under the
plain kill, and the correct node valid.

    .venv/bin/python benchmarks/lose_unfsynced.py [--seeds 1 2 3] [--backend local|docker]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "lose-unfsynced.toml"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--backend", choices=["local", "docker"], default="local")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="splitbrain-lose-"))
    config = work / "campaign.toml"
    text = EXAMPLE.read_text().replace("seeds = [1, 2, 3]", f"seeds = {args.seeds}")
    text = text.replace('backend = "local"', f'backend = "{args.backend}"')
    config.write_text(text.replace('results = "results"', f'results = "{work / "runs"}"'))
    subprocess.run([sys.executable, "-m", "harness.cli", "campaign", "--quiet", str(config)], cwd=ROOT, check=False)
    print("| target | seed | committed-data-loss | verdict |")
    print("|---|---|---|---|")
    caught: dict[str, list[bool]] = {}
    for verdict_path in sorted((work / "runs" / "lose-unfsynced").glob("*/verdict.json")):
        verdict = json.loads(verdict_path.read_text())
        run = json.loads((verdict_path.parent / "run.json").read_text())
        target = run["config"]["option_set"]
        loss = verdict["checkers"]["committed-data-loss"]["valid"]
        caught.setdefault(target, []).append(loss is False)
        print(f"| {target} | {run['seed']} | {loss} | {verdict['valid']} |")
    print()
    for target, found in caught.items():
        print(f"{target}: data loss caught in {sum(found)} of {len(found)} runs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
