"""Triage across an archive (issue "campaigns that outgrow one machine"): a
campaign of planted bugs, several runs each, beside the correct node under
the same faults (the detection matrix's settings: each bug under faults that
show it, drawn at random), archived and analysed on Spark. Prints each
failure group (its runs, option sets, first run) and, per bug, how many of
its runs failed and into how many groups they fell. The goal: one group per
bug, and no group for the correct node. With `--screenshot FILE`, serve's
page of the campaign, its groups first, as headless Chromium draws it.

    .venv/bin/python benchmarks/triage.py [--seeds 1 2 3] [--screenshot docs/triage-groups.png]
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ISOLATION = 'nemeses = ["partition"]\ntopologies = ["isolate-leader"]\ntime_limit_s = 16\n'
CHURN = 'nodes = 5\nnemeses = ["churn"]\ninterval_s = 3\ntime_limit_s = 30\npre_vote = false\n'
# A slow trickle of load, as the detection matrix has it: a pre-vote then comes while a follower still follows.
FLIP_FLOP = (
    'nodes = 5\nrate = 0.3\nconcurrency = 1\nnemeses = ["partition"]\ntopologies = ["flip-flop", "one-way"]\n'
    "time_limit_s = 30\n"
)
# Each option set: its bug (None: the correct node) and its settings.
OPTION_SETS = {
    "correct-append": (None, f'workloads = ["append"]\n{ISOLATION}'),
    "ack-before-commit": ("ack-before-commit", f'workloads = ["append"]\n{ISOLATION}'),
    "stale-read": ("stale-read", f'workloads = ["register"]\ncheck_quorum = false\n{ISOLATION}'),
    "forget-vote": ("forget-vote", CHURN),
    "prevote-always": ("prevote-always", FLIP_FLOP),
}
GOAL = "one group per bug, none for the correct node"


def campaign_file(folder: Path, seeds: list[int]) -> Path:
    tables = "".join(
        f"[targets.{name}]\n" + (f'bugs = ["{bug}"]\n' if bug else "") + settings + "\n"
        for name, (bug, settings) in OPTION_SETS.items()
    )
    path = folder / "triage.toml"
    path.write_text(
        f'[campaign]\nname = "triage"\nresults = "{folder / "runs"}"\nbackend = "local"\ninterval_s = 2\n'
        f'nemesis_strategy = "random"\nseeds = {json.dumps(seeds)}\n\n{tables}'
    )
    return path


def splitbrain(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness.cli", *args], cwd=ROOT, capture_output=True, text=True)


def screenshot(campaign: Path, shot: Path) -> None:
    """serve's page of the campaign's runs, drawn by headless Chromium."""
    server = subprocess.Popen(
        [sys.executable, "-m", "harness.cli", "serve", str(campaign), "--port", "0"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        url = re.search(r"http://127\.0\.0\.1:\d+/", server.stdout.readline() if server.stdout else "")
        browser = shutil.which("chromium")
        if not url or not browser:
            raise SystemExit("serve did not start, or chromium is missing (scripts/ensure-chromium.sh)")
        flags = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--window-size=1500,900"]
        subprocess.run([browser, *flags, f"--screenshot={shot.resolve()}", url[0]], capture_output=True, timeout=120)
    finally:
        server.terminate()
        server.wait(timeout=10)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--screenshot", type=Path, help="where serve's page of the campaign goes (PNG)")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="splitbrain-triage-"))
    campaign = splitbrain("campaign", "--quiet", str(campaign_file(folder, args.seeds)))
    if campaign.returncode not in (0, 1):
        print(campaign.stdout + campaign.stderr)
        return 2
    runs = folder / "runs" / "triage"
    store = folder / "archive"
    for step in (("archive", "--to", str(store), str(runs)), ("analyze", "--quiet", str(store))):
        done = splitbrain(*step)
        if done.returncode not in (0, 1):
            print(done.stdout + done.stderr)
            return 2
    groups = json.loads((store / "analysis" / "groups.json").read_text())
    print("| group | runs | option sets | first run |\n|---|---|---|---|")
    for g in groups:
        print(f"| {g['failure_group']} | {g['runs']} | {g['option_sets']} | {g['first_run']} |")
    print("\n| option set | bug | runs | failing runs | groups |\n|---|---|---|---|---|")
    met = True
    for name, (bug, _) in OPTION_SETS.items():
        verdicts = [json.loads(p.read_text()) for p in runs.glob(f"{name}-*/verdict.json")]
        failing = sum(v["valid"] is False for v in verdicts)
        mine = [g for g in groups if name in g["option_sets"].split(",")]
        print(f"| {name} | {bug or 'none'} | {len(verdicts)} | {failing} | {len(mine)} |")
        met &= (len(mine) == 1) if bug and failing else not mine
    met &= all("," not in g["option_sets"] for g in groups)  # no group holds two option sets' runs
    print(f"\n{'met' if met else 'NOT met'}: {GOAL}; runs in {runs}")
    if args.screenshot:
        screenshot(runs, args.screenshot)
        print(f"screenshot: {args.screenshot}")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
