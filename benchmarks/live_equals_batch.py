"""Live and batch verdicts on real runs (issue 40): one campaign with
`check_live = true` of 20 local runs of `--time-limit` s, valid and
failing, on the reference quorum and on etcd 3.4 (Debian's), its runs on
Spark (`--spark`, default `local[4]`; `--spark ""`: serially):

- kraft, correct node: append and register, seeds 1 to 3 (6 runs);
- kraft, planted bugs: ack-before-commit, stale-read (register, no
  check-quorum), prevote-always, forget-vote; seeds 1 and 2 (8 runs);
- etcd: append and register, seeds 1 to 3 (6 runs).

For every run, the live verdict (live.json's `valid`) is compared with the
batch one (verdict.json's) over the cases both judge: the batch checkers'
anomalies that only the nodes' final copies show (read once the run is
healed, after the live verdict; checkers/verdict.py's `AFTER_HEALING`) are
set aside. So is each checker the live verdict's last look judged
(live.json's `last`). Printed: each run, with the checkers that differ and
both answers; the runs whose verdicts are equal (goal: all 20), those
equal checker by checker, and those equal to the whole batch verdict.

    .venv/bin/python benchmarks/live_equals_batch.py [--time-limit 15] [--spark local[4]] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from checkers.verdict import as_judged_so_far  # noqa: E402

CAMPAIGN = """
[campaign]
name = "live"
results = "{results}"
backend = "local"
time_limit_s = {seconds}
check_live = true
{spark}
[targets.kraft-correct]
workloads = ["append", "register"]
seeds = [1, 2, 3]
[targets.kraft-ack-before-commit]
bugs = ["ack-before-commit"]
seeds = [1, 2]
[targets.kraft-stale-read]
bugs = ["stale-read"]
check_quorum = false
workloads = ["register"]
seeds = [1, 2]
[targets.kraft-prevote-always]
bugs = ["prevote-always"]
seeds = [1, 2]
[targets.kraft-forget-vote]
bugs = ["forget-vote"]
seeds = [1, 2]
[targets.etcd]
target = "etcd"
workloads = ["append", "register"]
seeds = [1, 2, 3]
"""


def compared(run_dir: Path) -> tuple[dict, dict, bool | str, bool | str]:
    """(checker: (live, batch)) for every checker the live verdict judged,
    each batch answer over the cases the live look judges too (its anomalies
    that only the final copies show set aside: `as_judged_so_far`); the live
    verdict; the batch verdict over those checkers and cases; the whole batch verdict."""
    live = json.loads((run_dir / "live.json").read_text())
    verdict = json.loads((run_dir / "verdict.json").read_text())
    checkers = verdict["checkers"]
    pairs = {
        name: (valid, as_judged_so_far(name, checkers[name]))
        for name, valid in live["last"].items()
        if name in checkers
    }
    answers = [batch for _, batch in pairs.values()]
    so_far = False if False in answers else "unknown" if "unknown" in answers else True
    return pairs, live, so_far, verdict["valid"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--time-limit", type=float, default=15)
    parser.add_argument("--spark", default="local[4]")
    parser.add_argument("--keep", type=Path, help="keep the campaign's runs in this new folder (default: removed)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="live-batch-")) if args.keep is None else args.keep.resolve()
    work.mkdir(parents=True, exist_ok=True)
    try:
        config = work / "c.toml"
        spark = f'spark = "{args.spark}"' if args.spark else ""
        config.write_text(CAMPAIGN.format(results=work, seconds=args.time_limit, spark=spark))
        start = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-m", "harness.cli", "campaign", "--quiet", str(config)],
            cwd=ROOT,
            capture_output=True,
            text=True,
        )
        if done.returncode not in (0, 1):
            sys.exit(f"campaign failed: {done.stderr.strip()[-800:]}")
        runs = sorted(p for p in (work / "live").iterdir() if (p / "verdict.json").exists())
        equal, alike, checker_by_checker, failing = 0, 0, 0, 0
        for run_dir in runs:
            pairs, live, so_far, whole = compared(run_dir)
            failing += whole is False
            equal += live["valid"] == so_far
            alike += live["valid"] == whole
            differs = {name: pair for name, pair in pairs.items() if pair[0] != pair[1]}
            checker_by_checker += not differs and bool(pairs)
            state = "equal" if not differs and pairs else f"DIFFERS {differs}" if pairs else "nothing judged live"
            print(
                f"{run_dir.name}: live {live['valid']}, batch {so_far} on the same cases ({whole} in all); "
                f"{len(pairs)} checkers: {state}"
            )
        print(f"runs: {len(runs)} ({failing} failing) in {time.monotonic() - start:.0f} s")
        print(
            f"LIVE verdict equal to the batch one on the cases both judge on {equal} of {len(runs)} runs (goal: all, 20)"
        )
        print(f"LIVE equal checker by checker on {checker_by_checker} of {len(runs)} runs")
        print(
            f"LIVE verdict equal to the whole batch verdict (with what only the final copies show) on {alike} of {len(runs)} runs"
        )
        return 0 if equal == len(runs) == 20 else 1
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
