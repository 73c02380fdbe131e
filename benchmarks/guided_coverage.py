"""Coverage, random against guided: the same 10-run campaign (the correct
reference quorum, the default nemesis set plus bounce, seeds 1 to 10) once
with `nemesis_strategy = "random"` and once with `"guided"`, and the cells
of (fault, role hit, what else was going on) each campaign's runs hit
together. The goal: guided hits at least 1.5x as many cells, with no false
alarm.

    .venv/bin/python benchmarks/guided_coverage.py [--backend local] [--nodes 5] [--runs 10] [--time-limit 30]
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

from checkers.coverage import add_up  # noqa: E402

CAMPAIGN = """
[campaign]
name = "{strategy}"
results = "{results}"
backend = "{backend}"
nodes = {nodes}
time_limit_s = {time_limit}
interval_s = 3
nemesis_strategy = "{strategy}"
workloads = ["append"]
nemeses = ["partition,kill,pause,bounce"]
seeds = {seeds}

[targets.correct]
"""


def campaign(folder: Path, strategy: str, args) -> tuple[list[dict], list]:
    path = folder / f"{strategy}.toml"
    path.write_text(
        CAMPAIGN.format(
            strategy=strategy,
            results=folder,
            backend=args.backend,
            nodes=args.nodes,
            time_limit=args.time_limit,
            seeds=list(range(1, args.runs + 1)),
        )
    )
    subprocess.run(
        [sys.executable, "-m", "harness.cli", "campaign", "--quiet", str(path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    verdicts = [json.loads(p.read_text()) for p in sorted((folder / strategy).glob("*/verdict.json"))]
    cells = add_up((v.get("coverage") or {}).get("cells", []) for v in verdicts)
    return cells, [v["valid"] for v in verdicts]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="local", choices=["local", "docker"])
    parser.add_argument("--nodes", type=int, default=5)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--time-limit", type=int, default=30)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="splitbrain-coverage-"))
    found = {}
    for strategy in ("random", "guided"):
        cells, valids = campaign(folder, strategy, args)
        found[strategy] = cells
        alarms = sum(v is not True for v in valids)
        print(
            f"{strategy}: {len(cells)} cells hit in {len(valids)} runs, {sum(c['count'] for c in cells)} faults; "
            f"runs not valid: {alarms}",
            flush=True,
        )
    ratio = len(found["guided"]) / max(len(found["random"]), 1)
    print(f"\nguided / random cells: {ratio:.2f} (goal: at least 1.5); campaigns in {folder}")
    only = sorted(
        {(c["fault"], c["role"], c["with"]) for c in found["guided"]}
        - {(c["fault"], c["role"], c["with"]) for c in found["random"]}
    )
    print("cells only guided hit:", ", ".join("/".join(c) for c in only))
    return 0 if ratio >= 1.5 else 1


if __name__ == "__main__":
    sys.exit(main())
