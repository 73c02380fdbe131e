"""How long the reference quorum's node takes to open its data directory and
build its core on a long log, with its recovery point and without one (the
whole log checked, as every start did before): the start a soak's restarts
wait for. Goal: a start on 3.5M records (the hour's soak reached that) that
does not grow with the log, within a second.

    .venv/bin/python benchmarks/kraft_start.py [--records 3500000]
"""

from __future__ import annotations

import argparse
import random
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from targets.kraft.core import RaftConfig, RaftCore  # noqa: E402
from targets.kraft.messages import Entry  # noqa: E402
from targets.kraft.storage import DataDir, Snapshot  # noqa: E402

GOAL_S = 1.0
BATCH = 10_000


def write_log(path: Path, records: int) -> None:
    """A log of appends as the soak's leader writes them (a few epochs), checkpointed."""
    data = DataDir(path)
    for first in range(0, records, BATCH):
        epoch = 1 + first * 5 // records
        batch = [
            Entry(epoch, {"op": "append", "key": "k", "value": i}) for i in range(first, min(records, first + BATCH))
        ]
        data.write_log(first, batch)
    data.checkpoint(Snapshot(records, epoch, {}))
    data.close(clean=True)


def start(path: Path, read_all: bool = False) -> tuple[float, int, float | None]:
    """Seconds to open the data directory and build the core, the records it
    holds, and with `read_all` the seconds to read every record from it, as
    the final log read does (a page of 1,000 records at a time)."""
    began = time.monotonic()
    data = DataDir(path)
    snapshot = data.snapshot
    core = RaftCore(
        RaftConfig("n1"),
        data.election_state,
        data.entries,
        random.Random(1),
        0,
        (snapshot.applied, snapshot.registers) if snapshot is not None else None,
    )
    took = time.monotonic() - began
    assert core.log.end_offset > 0
    reading = None
    if read_all:
        began = time.monotonic()
        core.hwm = core.log.end_offset
        read = sum(len(core.committed_entries(first, 1000)) for first in range(0, core.hwm, 1000))
        assert read == core.hwm
        reading = time.monotonic() - began
    data.close()
    return took, core.log.end_offset, reading


def peak_mib() -> int:
    """This process's peak resident memory so far (writing the log is the first peak)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 2**10


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=3_500_000)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="splitbrain-kraft-start-"))
    try:
        path = folder / "n1"
        began = time.monotonic()
        write_log(path, args.records)
        size = (path / "log.bin").stat().st_size
        print(f"log: {args.records:,} records, {size / 2**20:.0f} MiB, written in {time.monotonic() - began:.1f} s")
        with_point, records, reading = start(path, read_all=True)
        print(f"start with its recovery point: {with_point:.2f} s ({records:,} records), peak memory {peak_mib()} MiB")
        print(f"  then every record read from it, 1,000 at a time: {reading:.1f} s")
        (path / "recovery-point.json").unlink()
        whole, records, _ = start(path)
        print(f"start checking the whole log:  {whole:.2f} s ({records:,} records), peak memory {peak_mib()} MiB")
        met = with_point <= GOAL_S
        print(f"goal: a start within {GOAL_S:.0f} s on {args.records:,} records: {'met' if met else 'NOT met'}")
        return 0 if met else 1
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
