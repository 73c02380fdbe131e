"""A new leader's moment, read back from run directories: from a node's
election to its first commit in its epoch, its state may lack what earlier
epochs committed (the planted `stale-read` answers from it then, the
correct node does not). How often the load reached one is what decides
whether a run could catch such a bug at all, so this counts, per run:
leaderships, reads a new leader may have answered inside its moment
(called before its first commit, completed after its election), and the
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
from checkers.pairing import pair  # noqa: E402
from history.errors import HistoryError  # noqa: E402
from results.recording import find_run_dirs  # noqa: E402

# What a run directory must hold to be read: its events, its history and its verdict.
NEEDED = ("events.parquet", "history.parquet", "verdict.json")


@dataclass
class Moments:
    """One run's new leaders. A moment is counted (in `spans_ms`, `reads`,
    `fresh`) only where a commit in the leader's epoch ended it; `reads`
    are those a new leader may have answered inside its moment (called
    before its end, completed after its start)."""

    leaderships: int = 0
    reads: int = 0
    fresh: int = 0  # those leaderships of a node started again that had not yet followed
    fresh_reads: int = 0
    spans_ms: tuple[float, ...] = ()


def moments(run_dir: Path) -> Moments:
    """The new leaders' moments of one run, from its events and history."""
    events = pd.read_parquet(run_dir / "events.parquet", columns=["time_ns", "node", "event", "state", "epoch"])
    events = events.sort_values("time_ns", kind="stable")
    history = pd.read_parquet(run_dir / "history.parquet", columns=["time_ns", "process", "type", "f", "node"])
    # A read's answer left the node between its call and its completion: one
    # that overlaps a moment may have been answered inside it (a completion
    # row alone comes after the answer, and may fall just past the commit).
    pairs = pair(history)
    answers = history.iloc[pairs.done].assign(called_ns=history["time_ns"].to_numpy()[pairs.call])
    reads = answers[(answers["type"] == "ok") & (answers["f"] == "read")]
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
                overlaps = (reads["called_ns"] <= end) & (reads["time_ns"] >= row.time_ns)
                inside = int(((reads["node"] == node) & overlaps).sum())
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
    try:
        run_dirs = find_run_dirs(paths)
    except HistoryError as error:
        print(f"new_leader_moments.py: {error}", file=sys.stderr)
        return 2
    print("| run | leaderships | reads in a moment | fresh leaderships | their reads | linearizable |")
    print("|---|---|---|---|---|---|")
    runs = []
    for run_dir in run_dirs:
        missing = [name for name in NEEDED if not (run_dir / name).exists()]
        if missing:  # a run cut short, or still going
            print(f"| {run_dir.name} | not read: no {', '.join(missing)} | | | | |")
            continue
        found = moments(run_dir)
        runs.append(found)
        verdict = json.loads((run_dir / "verdict.json").read_text())["checkers"].get("linearizable") or {}
        print(
            f"| {run_dir.name} | {found.leaderships} | {found.reads} | {found.fresh} | {found.fresh_reads} "
            f"| {verdict.get('valid')} |"
        )
    spans = [span for found in runs for span in found.spans_ms]
    median = f"{statistics.median(spans):.1f} ms" if spans else "-"
    print(
        f"\n{sum(f.leaderships for f in runs)} leaderships, {sum(f.reads for f in runs)} reads that may have been"
        f" answered inside a new leader's moment; {sum(f.fresh for f in runs)} fresh leaderships, {sum(f.fresh_reads for f in runs)} reads"
        f" inside theirs; median moment {median}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
