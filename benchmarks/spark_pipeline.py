"""`splitbrain analyze` on Spark against the in-process engine, on one generated archive.

Run: .venv/bin/python benchmarks/spark_pipeline.py [--rows 100000000] [--ops 25000] [--master local[*]] [--spark-only] [--archive DIR]

Each generated run is a valid append history of `--ops` acknowledged appends
from 64 clients, 5 nodes' final logs and status/vote/transition events (the
generators of benchmarks/checker_speed.py), written as a run directory, as many runs as make `--rows` rows. Timed:
(1) the in-process engine, `check_run` per run in a loop, as `splitbrain
check` does; (2) `splitbrain analyze` on the archive of the same runs, each
stage, and in all. Both must find every run valid. The goal for (2) at
10^8 rows on 2 cores: at most 120 s, 60 s the aim; at 10^9 rows, at most
15 minutes. `--spark-only` leaves (1) out (at 10^9 rows it takes longer
than the goal it is compared with); every run's tables are the same, so
the first run's verdict, made once, is every run's before they are packed.
`--archive DIR` analyses an archive this benchmark made before (its
generated runs are not needed then) instead of making one.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from results import archive
from results.checking import check_run
from results.spark_pipeline import analyze

sys.path.insert(0, str(Path(__file__).parent))
from checker_speed import append_history, status_events  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=100_000_000)
    parser.add_argument("--ops", type=int, default=25_000)
    parser.add_argument("--master", default="local[*]")
    parser.add_argument("--spark-only", action="store_true", help="leave the in-process engine's timing out")
    parser.add_argument("--archive", type=Path, help="an archive this benchmark made before: analyse it alone")
    args = parser.parse_args()
    if args.archive is not None:
        timed_analysis(
            args.archive, args.master, len(archive.read_manifest(args.archive)["runs"]) * rows_per_run(args.ops)
        )
        return
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch) / "generated"
        history, final = append_history(args.ops)
        events = status_events(4 * args.ops)
        per_run = len(history) + len(final) + len(events)
        runs = []
        for n in range(-(-args.rows // per_run)):
            run_dir = folder / f"run-{n:04d}"
            run_dir.mkdir(parents=True)
            history.to_parquet(run_dir / "history.parquet", index=False)
            final.to_parquet(run_dir / "final.parquet", index=False)
            events.to_parquet(run_dir / "events.parquet", index=False)
            (run_dir / "run.json").write_text(json.dumps({"config": {"workload": "append", "nemesis": []}, "seed": n}))
            runs.append(run_dir)
        rows = len(runs) * per_run
        print(
            f"{len(runs)} runs, {rows:,} rows ({len(history):,} history, {len(final):,} final, {len(events):,} events each)"
        )

        if args.spark_only:
            verdict = json.dumps(check_run(runs[0]), default=str)
            for run_dir in runs:
                (run_dir / "verdict.json").write_text(verdict)
        else:
            start = time.perf_counter()
            for run_dir in runs:
                verdict = check_run(run_dir)
                assert verdict["valid"] is True, verdict
                (run_dir / "verdict.json").write_text(json.dumps(verdict, default=str))
            pandas_s = time.perf_counter() - start
            print(f"in-process engine, run by run: {pandas_s:7.1f} s  {rows / pandas_s:>12,.0f} rows/s")

        store = Path(scratch) / "archive"
        start = time.perf_counter()
        archive.add(store, runs, check_run)
        print(f"archive (copy + checksums):     {time.perf_counter() - start:7.1f} s")

        timed_analysis(store, args.master, rows)


def rows_per_run(ops: int) -> int:
    """A generated run's rows: 2 a history row per append, 5 nodes' final logs, 4 events per append."""
    return 2 * ops + 5 * ops + 4 * ops


def timed_analysis(store: Path, master: str, rows: int) -> None:
    start = time.perf_counter()
    found = analyze(store, master)
    spark_s = time.perf_counter() - start
    assert not found["problems"] and set(found["verdicts"]["valid"]) == {"true"}, found["verdicts"]
    for stage, seconds in found["timings"].items():
        print(f"  {stage + ':':29}{seconds:7.1f} s")
    print(
        f"splitbrain analyze ({master}) of {rows:,} rows: {spark_s:7.1f} s  {rows / spark_s:>12,.0f} rows/s  "
        f"(goal at 10^8 rows: 120 s, aim 60 s; at 10^9 rows: 900 s)"
    )


if __name__ == "__main__":
    main()
