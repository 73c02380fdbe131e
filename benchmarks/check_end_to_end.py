"""`splitbrain check` end to end on a large valid append run (issue "check at
the speed of the data"): a run directory of `--appends` acknowledged appends
from 64 concurrent clients on 5 nodes (2 history rows each), every node's
final log (5 rows each) and `--events` status polls, written as a run writes
them (Parquet, run.json with the reference quorum's capabilities); then the
command itself, timed, with its peak memory.

Prints the exit code (goal 0: decided, valid), rows per second over all
three tables, Parquet read included (goal 2M, floor 1M), from the median of
`--repeats` checks (each a new process), and the peak resident memory
(goal at most 4 GiB).

    .venv/bin/python benchmarks/check_end_to_end.py [--appends 1000000] [--events 100000] [--repeats 3] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import targets  # noqa: E402
from checkers.schema import EVENTS_COLUMNS, FINAL_COLUMNS, HISTORY_COLUMNS, TEXT  # noqa: E402

NODES = np.array(["n1", "n2", "n3", "n4", "n5"])
CLIENTS = 64
GOAL_ROWS_S, FLOOR_ROWS_S, GOAL_PEAK_GIB = 2_000_000, 1_000_000, 4.0


def text(values) -> pd.arrays.ArrowStringArray:
    return pd.array(values, dtype=TEXT)


def history(appends: int, rng: np.random.Generator) -> pd.DataFrame:
    """Append i invoked at i µs by client i mod 64, answered 1-50 µs later
    at offset i (a later invocation never gets a lower offset, so the log is
    linearizable); rows in time order."""
    op = np.arange(appends)
    call = op * 1000
    ret = call + rng.integers(1000, 50_000, appends)
    epoch = 1 + op // 200_000
    leader = NODES[(epoch - 1) % len(NODES)]
    time_ns = np.concatenate([call, ret])
    order = np.lexsort((np.concatenate([np.zeros(appends), np.ones(appends)]), time_ns))
    done = np.concatenate([np.zeros(appends, bool), np.ones(appends, bool)])[order]
    ops = np.concatenate([op, op])[order]
    value = np.char.add('"', np.char.add(ops.astype(str), '"'))
    table = pd.DataFrame(
        {
            "index": np.arange(2 * appends),
            "time_ns": time_ns[order],
            "process": ops % CLIENTS,
            "type": text(np.where(done, "ok", "invoke")),
            "f": text(np.full(2 * appends, "append")),
            "key": text([None] * (2 * appends)),
            "value": text(value),
            "node": text(leader[ops]),
            "epoch": pd.array(np.where(done, epoch[ops], None), dtype="Int64"),
            "leader": text(np.where(done, leader[ops], None)),
            "offset": pd.array(np.where(done, ops, None), dtype="Int64"),
            "error": text([None] * (2 * appends)),
        }
    )
    return _typed(table, HISTORY_COLUMNS)


def final(appends: int) -> pd.DataFrame:
    offsets = np.tile(np.arange(appends), len(NODES))
    value = np.char.add('"', np.char.add(offsets.astype(str), '"'))
    return _typed(
        pd.DataFrame(
            {
                "node": text(np.repeat(NODES, appends)),
                "key": text([None] * len(offsets)),
                "offset": pd.array(offsets, dtype="Int64"),
                "epoch": pd.array(1 + offsets // 200_000, dtype="Int64"),
                "value": text(value),
            }
        ),
        FINAL_COLUMNS,
    )


def events(polls: int, appends: int) -> pd.DataFrame:
    """Status polls of the 5 nodes over the run: one leader an epoch."""
    i = np.arange(polls)
    node = NODES[i % len(NODES)]
    epoch = 1 + (i * appends // polls) // 200_000
    leader = NODES[(epoch - 1) % len(NODES)]
    return _typed(
        pd.DataFrame(
            {
                "time_ns": i * (appends * 1000 // polls),
                "node": text(node),
                "generation": pd.array(np.ones(polls, int), dtype="Int64"),
                "event": text(np.full(polls, "status")),
                "state": text(np.where(node == leader, "leader", "follower")),
                "epoch": pd.array(epoch, dtype="Int64"),
                "leader": text(leader),
                "source": text(np.full(polls, "poll")),
            }
        ),
        EVENTS_COLUMNS,
    )


def _typed(table: pd.DataFrame, columns: dict[str, str]) -> pd.DataFrame:
    for name, dtype in columns.items():
        table[name] = table[name].astype(dtype) if name in table else pd.Series(pd.NA, index=table.index, dtype=dtype)
    return table[list(columns)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--appends", type=int, default=1_000_000)
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--keep", type=Path, help="write the run directory here and keep it")
    parser.add_argument("--repeats", type=int, default=3, help="checks of the run; the median is the figure")
    args = parser.parse_args()
    folder = args.keep or Path(tempfile.mkdtemp(prefix="splitbrain-e2e-"))
    run_dir = folder / "big-run"
    run_dir.mkdir(parents=True, exist_ok=True)
    tables = {
        "history.parquet": history(args.appends, np.random.default_rng(1)),
        "final.parquet": final(args.appends),
        "events.parquet": events(args.events, args.appends),
    }
    for name, table in tables.items():
        table.to_parquet(run_dir / name, index=False)
    capabilities = targets.get("kraft").capabilities.as_json()
    config = {"workload": "append", "nodes": 5, "nemesis": [], "bugs": [], "concurrency": CLIENTS}
    (run_dir / "run.json").write_text(json.dumps({"target": "kraft", "config": config, "capabilities": capabilities}))
    rows = sum(len(t) for t in tables.values())
    print(
        f"run: {args.appends:,} acknowledged appends, {rows:,} rows ({', '.join(f'{n} {len(t):,}' for n, t in tables.items())})"
    )
    del tables
    os.sync()  # the tables on disk, not in the kernel's write-back while the check reads them
    command = [sys.executable, "-m", "harness.cli", "check", str(run_dir), "--quiet"]
    times = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
        times.append(time.perf_counter() - start)
        if done.returncode:
            break
    seconds = statistics.median(times)
    peak_gib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 2**20
    print(done.stdout.strip()[-400:])
    print(f"exit {done.returncode} (goal 0)" + (f": {done.stderr.strip()[-300:]}" if done.returncode else ""))
    print(
        f"time {seconds:.2f} s, the median of {', '.join(f'{t:.2f}' for t in times)} s: {rows / seconds:,.0f} rows/s "
        f"(goal {GOAL_ROWS_S:,}, floor {FLOOR_ROWS_S:,})"
    )
    print(f"peak memory {peak_gib:.2f} GiB (goal at most {GOAL_PEAK_GIB:g})")
    if args.keep is None:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
