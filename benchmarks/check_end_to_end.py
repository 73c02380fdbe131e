"""`splitbrain check` end to end on a large valid append run (issue "check at
the speed of the data"): a run directory of `--appends` acknowledged appends
from 64 concurrent clients on 5 nodes (2 history rows each), every node's
final log (5 rows each) and `--events` status polls, written as a run writes
them (Parquet, run.json with the reference quorum's capabilities); then the
command itself, timed, with its peak memory.

Prints the exit code (goal 0: decided, valid), rows per second over all
three tables, Parquet read included (goal 2M, floor 1M), from the median of
`--repeats` checks (each a new process), and the peak resident memory
(goal at most 8 GiB). Given several sizes (`--appends 1400000 14000000`:
about 10^7 and 10^8 rows), each is written and checked in turn, and the
largest one's peak memory is compared with the smallest's (goal: at most
1.5 times; a long run is checked in pieces, results/pieces.py). The tables
are written a million appends at a time, so a run of 10^8 rows is made in
about 2 minutes and 1.1 GB of disk.

    .venv/bin/python benchmarks/check_end_to_end.py [--appends 1000000 ...] [--events N] [--repeats 3] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import targets  # noqa: E402
from history.schema import EVENTS_COLUMNS, FINAL_COLUMNS, HISTORY_COLUMNS, TEXT  # noqa: E402

NODES = np.array(["n1", "n2", "n3", "n4", "n5"])
CLIENTS = 64
CHUNK = 1_000_000  # appends generated at a time
ROW_GROUP = 1024 * 1024  # pyarrow's default
GOAL_ROWS_S, FLOOR_ROWS_S, GOAL_PEAK_GIB, GOAL_PEAK_RATIO = 2_000_000, 1_000_000, 8.0, 1.5


def text(values) -> pd.arrays.ArrowStringArray:
    return pd.array(values, dtype=TEXT)


def history(appends: int, rng: np.random.Generator) -> Iterator[pd.DataFrame]:
    """Append i invoked at i µs by client i mod 64, answered 1-50 µs later
    at offset i (a later invocation never gets a lower offset, so the log is
    linearizable); rows in time order, CHUNK appends' rows at a time (the
    answers not yet due wait for the next chunk)."""
    waiting = np.zeros(0, dtype="int64")  # appends called, their answers not yet written
    answers = np.zeros(0, dtype="int64")
    written = 0
    for start in range(0, appends, CHUNK):
        op = np.arange(start, min(start + CHUNK, appends))
        call = op * 1000
        ret = np.concatenate([answers, call + rng.integers(1000, 50_000, len(op))])
        answered = np.concatenate([waiting, op])
        due = ret < (op[-1] + 1) * 1000 if op[-1] + 1 < appends else np.ones(len(ret), bool)
        ops = np.concatenate([op, answered[due]])
        time_ns = np.concatenate([call, ret[due]])
        done = np.concatenate([np.zeros(len(op), bool), np.ones(int(due.sum()), bool)])
        order = np.lexsort((done, time_ns))
        waiting, answers = answered[~due], ret[~due]
        yield _rows(ops[order], time_ns[order], done[order], written)
        written += len(order)


def _rows(ops: np.ndarray, time_ns: np.ndarray, done: np.ndarray, first: int) -> pd.DataFrame:
    epoch = 1 + ops // 200_000
    leader = NODES[(epoch - 1) % len(NODES)]
    value = np.char.add('"', np.char.add(ops.astype(str), '"'))
    table = pd.DataFrame(
        {
            "index": first + np.arange(len(ops)),
            "time_ns": time_ns,
            "process": ops % CLIENTS,
            "type": text(np.where(done, "ok", "invoke")),
            "f": text(np.full(len(ops), "append")),
            "key": text([None] * len(ops)),
            "value": text(value),
            "node": text(leader),
            "epoch": pd.array(np.where(done, epoch, None), dtype="Int64"),
            "leader": text(np.where(done, leader, None)),
            "offset": pd.array(np.where(done, ops, None), dtype="Int64"),
            "error": text([None] * len(ops)),
        }
    )
    return _typed(table, HISTORY_COLUMNS)


def final(appends: int) -> Iterator[pd.DataFrame]:
    """Every node's log, node by node, CHUNK records at a time."""
    for node in NODES:
        for start in range(0, appends, CHUNK):
            offsets = np.arange(start, min(start + CHUNK, appends))
            value = np.char.add('"', np.char.add(offsets.astype(str), '"'))
            yield _typed(
                pd.DataFrame(
                    {
                        "node": text(np.full(len(offsets), node)),
                        "key": text([None] * len(offsets)),
                        "offset": pd.array(offsets, dtype="Int64"),
                        "epoch": pd.array(1 + offsets // 200_000, dtype="Int64"),
                        "value": text(value),
                    }
                ),
                FINAL_COLUMNS,
            )


def write(path: Path, chunks: Iterable[pd.DataFrame]) -> int:
    """The chunks as one Parquet file, as a run writes its tables (row groups
    of pyarrow's default size); the rows written."""
    rows, writer = 0, None
    for chunk in chunks:
        table = pa.Table.from_pandas(chunk, preserve_index=False)
        writer = writer or pq.ParquetWriter(path, table.schema)
        writer.write_table(table, row_group_size=ROW_GROUP)
        rows += len(chunk)
    if writer is not None:
        writer.close()
    return rows


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
    parser.add_argument("--appends", type=int, nargs="+", default=[1_000_000], help="one run of each size, in turn")
    parser.add_argument("--events", type=int, help="status polls (default: a tenth of the appends)")
    parser.add_argument("--keep", type=Path, help="write the run directories here and keep them")
    parser.add_argument("--repeats", type=int, default=3, help="checks of each run; the median is the figure")
    args = parser.parse_args()
    folder = args.keep or Path(tempfile.mkdtemp(prefix="splitbrain-e2e-"))
    peaks = {}
    for appends in args.appends:
        peaks[appends] = measure(folder / f"run-{appends}", appends, args.events or appends // 10, args.repeats)
    if len(peaks) > 1:
        low, high = min(peaks), max(peaks)
        print(
            f"peak memory at {high:,} appends {peaks[high] / peaks[low]:.2f} times that at {low:,} "
            f"(goal at most {GOAL_PEAK_RATIO:g})"
        )
    if args.keep is None:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


def measure(run_dir: Path, appends: int, polls: int, repeats: int) -> float:
    """Write the run and check it `repeats` times; print the figures; the peak memory in GiB."""
    run_dir.mkdir(parents=True, exist_ok=True)
    tables = {
        "history.parquet": history(appends, np.random.default_rng(1)),
        "final.parquet": final(appends),
        "events.parquet": [events(polls, appends)],
    }
    written = {name: write(run_dir / name, chunks) for name, chunks in tables.items()}
    capabilities = targets.get("kraft").capabilities.as_json()
    config = {"workload": "append", "nodes": 5, "nemesis": [], "bugs": [], "concurrency": CLIENTS}
    (run_dir / "run.json").write_text(json.dumps({"target": "kraft", "config": config, "capabilities": capabilities}))
    rows = sum(written.values())
    print(
        f"run: {appends:,} acknowledged appends, {rows:,} rows ({', '.join(f'{n} {r:,}' for n, r in written.items())})"
    )
    os.sync()  # the tables on disk, not in the kernel's write-back while the check reads them
    command = [sys.executable, "-m", "harness.cli", "check", str(run_dir), "--quiet"]
    times, peak_gib = [], 0.0
    for _ in range(repeats):
        start = time.perf_counter()
        code, stdout, stderr, peak = _check(command)
        times.append(time.perf_counter() - start)
        peak_gib = max(peak_gib, peak)
        if code:
            break
    seconds = statistics.median(times)
    print(stdout.strip()[-400:])
    print(f"exit {code} (goal 0)" + (f": {stderr.strip()[-300:]}" if code else ""))
    print(
        f"time {seconds:.2f} s, the median of {', '.join(f'{t:.2f}' for t in times)} s: {rows / seconds:,.0f} rows/s "
        f"(goal {GOAL_ROWS_S:,}, floor {FLOOR_ROWS_S:,})"
    )
    print(f"peak memory {peak_gib:.2f} GiB (goal at most {GOAL_PEAK_GIB:g})")
    return peak_gib


def _check(command: list[str]) -> tuple[int, str, str, float]:
    """The command's exit code, output, errors and peak resident memory (GiB; its own, from wait4)."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        child = subprocess.Popen(command, cwd=ROOT, stdout=out, stderr=err, text=True)
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0), err.seek(0)
        return child.returncode, out.read(), err.read(), usage.ru_maxrss / 2**20


if __name__ == "__main__":
    sys.exit(main())
