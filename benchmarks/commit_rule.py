"""Raft's commit rule dropped, in the simulator (issue 39: `simulate` runs 5
nodes and deep schedules "so that commit-rule bugs (Raft's figure 8) are
reachable"). The rule: a leader commits by counting replicas only a record
of its own epoch (`Core._maybe_advance_hwm`'s `epoch_at(candidate - 1) ==
self.epoch`); without it, a leader may commit a record of an earlier epoch
that a log of a later epoch can still overwrite, as in figure 8 of the Raft
paper. The mutant is `splitbrain mutate`'s (`drop-clause`: the clause made
`True`); no planted bug makes it, so it is a bug nobody described to the
search.

The mutant and the code as it is run the same seeds (5 nodes, `--steps` a
schedule) under `--search random` and `--search novelty`, side by side.
`--fetch-max-records N` goes to both (the target option: a fetch answer
carries at most N records, 512 by default); `--moments` to the random
search (its schedules also cut a leader off as it is elected or as it
first commits; the novelty search times its own faults).
Printed per copy and search: schedules that broke a safety invariant and
those that broke liveness (few records a fetch can leave followers
catching up slower than the load, the correct code too), and
whether what the simulation did differs from the original's (the digest of
every schedule's events: the rule `splitbrain mutate` sets equivalent
mutants apart by). Then figure 8 itself, made by hand
(`targets/kraft/sim/scenarios.py`'s `figure_8`, with leaders cut off at the
moments it needs), over `--scenario-seeds` seeds per copy and fetch size
(1, 2 and 512 records an answer): the seeds whose run broke an invariant.

    .venv/bin/python benchmarks/commit_rule.py [--schedules 1000] [--novelty-schedules 300] [--steps 40] [--seed 1]
        [--fetch-max-records 512] [--moments]

(The novelty search's schedules take longer, as its memory grows: 300 by default.)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.mutants import mutants  # noqa: E402
from harness.mutation import copy_project, run_in_copy  # noqa: E402

CORE = "targets/kraft/core.py"
CLAUSE = "self.log.epoch_at(candidate - 1) == self.epoch"


def simulate(copy: Path, search: str, schedules: int, args: argparse.Namespace) -> tuple[Counter[str], str, float]:
    """Schedules that broke an invariant, by kind (safety or liveness), the
    digest of what the simulation did, seconds taken."""
    started = time.monotonic()
    options = ["--fetch-max-records", str(args.fetch_max_records)]
    if args.moments and search == "random":
        options.append("--moments")
    done = run_in_copy(
        copy,
        ["simulate", "--quiet", "--keep-going", "--nodes", "5", "--search", search, *options]
        + ["--schedules", str(schedules), "--steps", str(args.steps), "--seed", str(args.seed)],
        timeout_s=3600,
    )
    try:
        verdict = json.loads(done.stdout)["checkers"]["simulation-invariants"]
    except (ValueError, KeyError):
        raise SystemExit(
            f"commit_rule: simulate --search {search} gave no verdict: {done.stderr.strip()[-300:]}"
        ) from None
    kinds = Counter("liveness" if ": liveness: " in a["violation"] else "safety" for a in verdict["anomalies"])
    return kinds, verdict["stats"]["digest"], time.monotonic() - started


SCENARIO = """
import sys
from targets.kraft.sim.scenarios import figure_8
from targets.kraft.sim.simulation import SimSettings
fetch, seeds = int(sys.argv[1]), int(sys.argv[2])
print(sum(figure_8(SimSettings(nodes=5, seed=seed, fetch_max_records=fetch)) is not None for seed in range(seeds)))
"""


def scenario(copy: Path, fetch: int, seeds: int) -> int:
    """Seeds of the figure-8 scenario whose run broke an invariant, with the copy's code."""
    done = subprocess.run(
        [sys.executable, "-c", SCENARIO, str(fetch), str(seeds)],
        cwd=copy,
        env={**os.environ, "PYTHONPATH": str(copy)},
        capture_output=True,
        text=True,
        timeout=3600,
        check=False,
    )
    if done.returncode:
        raise SystemExit(f"commit_rule: the figure-8 scenario failed: {done.stderr.strip()[-300:]}")
    return int(done.stdout)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--schedules", type=int, default=1000, help="random schedules")
    parser.add_argument("--novelty-schedules", type=int, default=300, help="the novelty search's schedules")
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--fetch-max-records", type=int, default=512, help="records a fetch answer carries at most")
    parser.add_argument("--moments", action="store_true", help="random schedules also cut leaders off at moments")
    parser.add_argument("--scenario-seeds", type=int, default=100, help="seeds of the figure-8 scenario per copy")
    args = parser.parse_args()
    source = (ROOT / CORE).read_text()
    found = [m for m in mutants(CORE, source) if m.operator == "drop-clause" and m.before == CLAUSE]
    if len(found) != 1:
        print(f"commit_rule: {CORE} no longer holds the commit rule's clause `{CLAUSE}` once", file=sys.stderr)
        return 2
    print(f"the mutant: {found[0].describe()}")
    with tempfile.TemporaryDirectory(prefix="commit-rule-") as folder:
        original = copy_project(Path(folder) / "original")
        dropped = copy_project(Path(folder) / "dropped")
        (dropped / CORE).write_text(found[0].source)
        for search, schedules in (("random", args.schedules), ("novelty", args.novelty_schedules)):
            with ThreadPoolExecutor(2) as pool:  # the two copies side by side, a core each
                kept, broken = pool.map(
                    partial(simulate, search=search, schedules=schedules, args=args), (original, dropped)
                )
            for name, (violations, digest, seconds) in (("original", kept), ("rule dropped", broken)):
                differs = (
                    "" if name == "original" else f", behaves {'differently' if digest != kept[1] else 'the same'}"
                )
                print(
                    f"{search:8} {name:13} {violations['safety']} of {schedules} schedules broke a safety invariant,"
                    f" {violations['liveness']} liveness"
                    f" ({args.steps} steps, 5 nodes, {args.fetch_max_records} records a fetch"
                    f"{', moments' if args.moments and search == 'random' else ''}, {seconds:.0f} s{differs})"
                )
        for fetch in (1, 2, 512):
            kept, broken = (scenario(copy, fetch, args.scenario_seeds) for copy in (original, dropped))
            print(
                f"figure 8 by hand, {fetch} records a fetch: original {kept}, rule dropped {broken}"
                f" of {args.scenario_seeds} seeds broke an invariant"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
