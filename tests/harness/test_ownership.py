"""The ledger and the reaper on plain processes: a sweep removes what its
ledger recorded or marked and nothing else (not a process that merely runs the
same command, not a reused pid), and a reaper sweeps once the process holding
its pipe dies, however it dies."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from harness.docker_cluster import name_prefix
from harness.ownership import (
    OWNER_ENV,
    Ownership,
    alive,
    marked_mounts,
    marked_processes,
    mount_source,
    read_ledger,
    start_time,
    sweep,
)

SLEEPER = [sys.executable, "-c", "import time; time.sleep(120)"]


def gone(process: subprocess.Popen, timeout_s: float = 10.0) -> bool:
    try:
        process.wait(timeout_s)
        return True
    except subprocess.TimeoutExpired:
        return False


def test_a_sweep_removes_what_its_ledger_names_and_nothing_else(tmp_path):
    mine = Ownership(tmp_path / "a", "run-a")
    recorded = subprocess.Popen(SLEEPER, env=mine.environment())
    mine.process(recorded.pid)
    marked_only = subprocess.Popen(SLEEPER, env=mine.environment())  # started, not yet recorded: a crash came between
    stranger = subprocess.Popen(SLEEPER)  # the same command line, someone else's
    other_run = subprocess.Popen(
        SLEEPER, env=Ownership(tmp_path / "b", "run-a").environment()
    )  # same run id, other owner
    try:
        time.sleep(0.2)
        assert marked_processes(OWNER_ENV, mine.owner) == sorted([recorded.pid, marked_only.pid])
        removed = sweep(mine.path)
        assert sorted(removed) == sorted([f"process {recorded.pid}", f"process {marked_only.pid}"])
        assert gone(recorded) and gone(marked_only)
        assert stranger.poll() is None and other_run.poll() is None
        assert sweep(mine.path) == []  # twice is safe
    finally:
        for process in (recorded, marked_only, stranger, other_run):
            process.kill()
            process.wait()


def test_a_reused_pid_is_not_ours(tmp_path):
    """A recorded pid whose start time differs is another process now."""
    ledger = Ownership(tmp_path, "run-r")
    process = subprocess.Popen(SLEEPER)
    try:
        with open(ledger.path, "a") as f:
            f.write(f'{{"process": {process.pid}, "start": {start_time(process.pid) - 1}}}\n')
        assert sweep(ledger.path) == [] and process.poll() is None
        assert alive(process.pid, start_time(process.pid))
    finally:
        process.kill()
        process.wait()
    assert not alive(process.pid, start_time(process.pid))


def test_the_reaper_sweeps_when_its_harness_is_sigkilled(tmp_path):
    """A stand-in harness records a child and starts a reaper; SIGKILL of the
    harness is all it takes for the child to go."""
    harness = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(f"""
        import subprocess, sys, time
        from harness.ownership import Ownership
        ownership = Ownership({str(tmp_path)!r}, "run-k")
        ownership.watch()
        child = subprocess.Popen({SLEEPER!r}, env=ownership.environment(), start_new_session=True)
        ownership.process(child.pid)
        print(child.pid, flush=True)
        time.sleep(120)
    """),
        ],
        stdout=subprocess.PIPE,
        text=True,
        cwd=os.getcwd(),
    )
    child = int(harness.stdout.readline())
    _, entries = read_ledger(tmp_path / "owned.jsonl")
    started = entries[0]["start"]
    assert alive(child, started)
    harness.send_signal(signal.SIGKILL)
    harness.wait(10)
    deadline = time.monotonic() + 10
    while alive(child, started) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(child, started)
    # The reaper writes its line after the kill: give it the same deadline (a loaded CI read it first).
    log = tmp_path / "reaper.log"
    while f"removed process {child}" not in log.read_text() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert f"removed process {child}" in log.read_text()


@given(st.text(min_size=1, max_size=80))
def test_docker_names_take_any_run_id_and_stay_apart(run_id):
    """A campaign's run id holds its nemesis set ("pause+kill"): Docker allows
    fewer characters in names, and two owners never share a name."""
    names = {name_prefix(f"{run_id}-{pid}-cafe") for pid in (1, 2)}
    assert len(names) == 2
    assert all(re.fullmatch(r"[a-zA-Z0-9][a-zA-Z0-9_.-]*", name) for name in names)


def test_a_runs_mounts_are_found_by_their_source_with_no_ledger(tmp_path):
    mounts = tmp_path / "mounts"
    mounts.write_text(
        f"{mount_source('r1')} /runs/r1/cluster/n1/data fuse rw 0 0\n"
        f"{mount_source('r1')} /runs/my\\040runs/r1/n2/data fuse rw 0 0\n"
        f"{mount_source('r2')} /runs/r2/cluster/n1/data fuse rw 0 0\n"
        "splitbrain-lazyfs /old/n1/data fuse rw 0 0\n"
        "proc /proc proc rw 0 0\n"
    )
    assert marked_mounts("r1", mounts) == [Path("/runs/r1/cluster/n1/data"), Path("/runs/my runs/r1/n2/data")]
    assert len(marked_mounts(None, mounts)) == 4
