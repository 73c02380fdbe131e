"""`splitbrain simulate --spark MASTER`: the schedules' seeds split across
Spark tasks, each a run of the target's own `simulate` over its share.

A task holds a fixed number of consecutive seeds (CHUNK), so the split, and
with it the verdict, depends only on the schedules asked for, not on the
cluster's size. The verdict is the serial one: without `--keep-going` the
first violation by seed, and the schedules up to it; with it, every
violation in seed order. What the simulated nodes did is digested per
task, and the tasks' digests digested in seed order (`mutate` compares
digests made the same way).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

CHUNK = 50


def simulate(
    master: str,
    target_name: str,
    settings: dict,
    schedules: int,
    steps: int,
    seed: int,
    membership: bool,
    keep_going: bool,
    progress,
    moments: bool = False,
) -> dict:
    """The verdict `simulate` gives, from the seeds' share run on Spark's
    executors; `progress(done, total)` hears as tasks end."""
    from results.spark_session import collected, session

    spark = session(master, Path("/dev/null"), app="simulate")
    try:
        sc = spark.sparkContext
        shares = [(seed + start, min(CHUNK, schedules - start)) for start in range(0, schedules, CHUNK)]
        done = sc.accumulator(0)

        def share(item: tuple[int, int]) -> tuple[int, dict]:
            import targets
            from targets.interface import Simulated

            first, count = item
            target = targets.get(target_name)
            assert isinstance(target, Simulated)  # simulate's command refuses a target without a simulator
            verdict = target.simulate(
                settings, count, steps, first, membership, keep_going, lambda seeds: seeds, moments=moments
            )
            done.add(count)
            return first, verdict

        job = sc.parallelize(shares, len(shares)).map(share)
        found = sorted(collected(job, lambda: progress(done.value, schedules)), key=lambda item: item[0])
        progress(schedules, schedules)
    finally:
        spark.stop()
    return merged([verdict for _, verdict in found], keep_going, len(shares))


def merged(verdicts: list[dict], keep_going: bool, tasks: int) -> dict:
    """The tasks' verdicts (in seed order) as one: the serial campaign's."""
    anomalies: list[dict] = []
    ran = 0
    digest = hashlib.sha256()
    stats: dict = {}
    for verdict in verdicts:
        result = verdict["checkers"]["simulation-invariants"]
        stats = result["stats"]
        ran += stats["schedules"]
        digest.update(stats["digest"].encode())
        anomalies += result["anomalies"]
        if anomalies and not keep_going:
            break
    stats = {**stats, "schedules": ran, "digest": digest.hexdigest(), "tasks": tasks}
    checker = {"valid": not anomalies, "anomalies": anomalies, "stats": stats}
    return {"valid": not anomalies, "checkers": {"simulation-invariants": checker}}
