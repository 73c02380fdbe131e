"""A new leader's moment, read back from run directories: from a node's
election to its first commit in its epoch, its state may lack what earlier
epochs committed (the planted `stale-read` answers from it then, the
correct node does not). How often the load reached one is what decides
whether a run could catch such a bug at all, so this counts, per run:
leaderships, reads answered by a new leader inside its moment, and the
fresh leaderships among them (a node started again and elected before it
followed any leader: its state is furthest behind), with the median
moment and each run's `linearizable` verdict.

    .venv/bin/python benchmarks/new_leader_moments.py RUN_DIR_OR_FOLDER [...]

For example, after `benchmarks/guided_find_rate.py ... --bugs stale-read
--nemesis partition,kill,pause`, on the folder it names last.
"""

from __future__ import annotations

import json
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from checkers.errors import HistoryError  # noqa: E402
from results.history import find_run_dirs  # noqa: E402


@dataclass
class Moments:
    leaderships: int = 0
    reads: int = 0  # reads a new leader answered inside its moment
    fresh: int = 0  # leaderships of a node started again that had not yet followed
    fresh_reads: int = 0
    spans_ms: tuple[float, ...] = ()


def moments(run_dir: Path) -> Moments:
    """The new leaders' moments of one run, from its events and history."""
    events = pd.read_parquet(run_dir / "events.parquet", columns=["time_ns", "node", "event", "state", "epoch"])
    events = events.sort_values("time_ns", kind="stable")
    history = pd.read_parquet(run_dir / "history.parquet", columns=["time_ns", "type", "f", "node"])
    reads = history[(history["type"] == "ok") & (history["f"] == "read")]
    first_commit = events[events["event"] == "commit"].groupby(["node", "epoch"])["time_ns"].min()
    found, spans = Moments(), []
    for node, said in events.groupby("node"):
        starts, followed = 0, False
        for row in said.itertuples(index=False):
            if row.event == "start":
                starts, followed = starts + 1, False
            elif row.event == "transition" and row.state == "follower":
                followed = True
            elif row.event == "transition" and row.state == "leader":
                found.leaderships += 1
                fresh = starts > 1 and not followed
                followed = True  # after leading, it is no longer fresh
                end = first_commit.get((node, row.epoch))
                if end is None or pd.isna(end):
                    continue
                spans.append((end - row.time_ns) / 1e6)
                inside = int(((reads["node"] == node) & reads["time_ns"].between(row.time_ns, end)).sum())
                found.reads += inside
                found.fresh += fresh
                found.fresh_reads += inside if fresh else 0
    found.spans_ms = tuple(spans)
    return found


def main() -> int:
    paths = [Path(arg) for arg in sys.argv[1:]]
    if not paths:
        print("usage: new_leader_moments.py RUN_DIR_OR_FOLDER [...]", file=sys.stderr)
        return 2
    total = Moments()
    spans: list[float] = []
    try:
        run_dirs = find_run_dirs(paths)
    except HistoryError as error:
        print(f"new_leader_moments.py: {error}", file=sys.stderr)
        return 2
    print("| run | leaderships | reads in a moment | fresh leaderships | their reads | linearizable |")
    print("|---|---|---|---|---|---|")
    for run_dir in run_dirs:
        found = moments(run_dir)
        verdict = json.loads((run_dir / "verdict.json").read_text())["checkers"].get("linearizable") or {}
        print(
            f"| {run_dir.name} | {found.leaderships} | {found.reads} | {found.fresh} | {found.fresh_reads} "
            f"| {verdict.get('valid')} |"
        )
        total.leaderships += found.leaderships
        total.reads += found.reads
        total.fresh += found.fresh
        total.fresh_reads += found.fresh_reads
        spans += found.spans_ms
    median = f"{statistics.median(spans):.1f} ms" if spans else "-"
    print(
        f"\n{total.leaderships} leaderships, {total.reads} reads answered inside a new leader's moment;"
        f" {total.fresh} fresh leaderships, {total.fresh_reads} reads inside theirs; median moment {median}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
