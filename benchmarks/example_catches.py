"""How often a campaign example's option sets are caught: the example over
the given seeds, each option set run once per seed. Prints each run's
verdict from the checker the example is about, then per option set how many
runs it caught. The examples and their goals (issue "KIP-380 with disk and
clock faults"):

- `examples/lose-unfsynced.toml` (committed-data-loss): ack-before-fsync
  caught under the power loss, missed under the plain kill; the correct
  node valid.
- `examples/ignore-generation.toml` (committed-data-loss): ignore-generation
  caught in at least 2 of 3 seeds on Docker; the correct node with a flush
  interval valid in 10 runs (`--targets correct --seeds 1 ... 10`).
- `examples/lease-reads.toml` (linearizable): lease reads under clock faults
  caught in at least 2 of 3 seeds; the same partitions without the clock
  fault, and the clock fault without lease reads, valid.
- `examples/etcd-13766.toml` (committed-data-loss): etcd #13766, members
  apart after kills under heavy writes, on 3.5.1; Debian's 3.4.23 the
  control, under the same faults and seeds.
- `examples/nats-moonshot.toml` (any checker: `--targets guided`, then
  `--targets novelty`): 2.15.1 under every fault it takes, 50 runs each.
- `examples/nats-jepsen-2.12.toml` (committed-data-loss): Jepsen's four
  NATS 2.12.1 findings on the releases its `versions` names, 5 seeds each
  (`--seeds 1 2 3 4 5`): per option set and version.

    .venv/bin/python benchmarks/example_catches.py --example examples/lease-reads.toml --checker linearizable
        [--seeds 1 2 3] [--targets lease lease-clock] [--workloads append] [--backend local|docker]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET_TABLE = re.compile(r"^\[targets\.([\w-]+)\]\n(?:(?!\[).*\n?)*", re.MULTILINE)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", help="instead of the example's own seeds")
    parser.add_argument("--backend", choices=["local", "docker"], default="local")
    parser.add_argument("--example", type=Path, required=True, help="a campaign TOML")
    parser.add_argument("--checker", default="committed-data-loss", help="the checker whose verdict counts")
    parser.add_argument("--targets", nargs="+", help="only these option sets of the example")
    parser.add_argument("--workloads", nargs="+", help="instead of the example's own workloads")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="splitbrain-catches-"))
    config = work / "campaign.toml"
    text = args.example.read_text()
    if args.targets:
        text = TARGET_TABLE.sub(lambda table: table[0] if table[1] in args.targets else "", text)
    if args.seeds:
        text = re.sub(r"^seeds = \[[^\]]*\]", f"seeds = {args.seeds}", text, flags=re.MULTILINE)
    if args.workloads:
        listed = ", ".join(f'"{name}"' for name in args.workloads)
        text = re.sub(r"^workloads = \[[^\]]*\]", f"workloads = [{listed}]", text, flags=re.MULTILINE)
    text = text.replace('backend = "local"', f'backend = "{args.backend}"')
    config.write_text(text)
    subprocess.run(
        [sys.executable, "-m", "harness.cli", "campaign", "--quiet", "--results", str(work / "runs"), str(config)],
        cwd=ROOT,
        check=False,
    )
    summarize(work / "runs", args.checker)
    return 0


def summarize(runs: Path, checker: str) -> None:
    """A row per run (the checker's verdict, its anomalies' kinds, and for
    committed-data-loss how many acknowledged appends were lost), then per
    option set how many runs it caught."""
    print(
        f"| target | version | workload | seed | {checker} | anomalies | lost of acknowledged | checkers false | run |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    caught: dict[str, list[bool]] = {}
    for verdict_path in sorted(runs.glob("*/*/verdict.json")):
        verdict = json.loads(verdict_path.read_text())
        run = json.loads((verdict_path.parent / "run.json").read_text())
        version = run.get("server_version") or "-"
        target = f"{run['config']['option_set']} on {version}" if run.get("release") else run["config"]["option_set"]
        result = verdict["checkers"].get(checker, {"valid": "-"})  # not judged: a workload it does not read
        valid = result["valid"]
        false = sorted(name for name, judged in verdict["checkers"].items() if judged["valid"] is False)
        kinds = sorted({anomaly.get("kind", "?") for anomaly in result.get("anomalies", [])})
        stats = result.get("stats", {})
        lost = f"{stats['lost_appends']} of {stats['acknowledged']}" if "lost_appends" in stats else "-"
        caught.setdefault(target, []).append(valid is False)
        print(
            f"| {run['config']['option_set']} | {version} | {run['config']['workload']} | {run['seed']} | {valid} "
            f"| {', '.join(kinds) or '-'} | {lost} | {', '.join(false) or '-'} | {verdict_path.parent} |"
        )
    print()
    for target, found in caught.items():
        print(f"{target}: {checker} caught it in {sum(found)} of {len(found)} runs")


if __name__ == "__main__":
    sys.exit(main())
