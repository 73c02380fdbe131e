"""Processes as /proc shows them, each named by (pid, start time) so that
a pid reused later is not mistaken for it: a process's tree, which of a
set are still running, and their command lines. What a Spark campaign waits
on, and what its tests check is gone."""

from __future__ import annotations

from pathlib import Path

from harness.ownership import alive as still_running
from harness.ownership import proc_stat, start_time


def descendants(root: int) -> set[tuple[int, int]]:
    """`root` and every process below it, from /proc's parent links, each
    as (pid, start time): a pid reused later is not mistaken for it."""
    children: dict[int, list[tuple[int, int]]] = {}
    for entry in Path("/proc").iterdir():
        fields = proc_stat(entry.name) if entry.name.isdigit() else None
        if fields:
            children.setdefault(int(fields[1]), []).append((int(entry.name), int(fields[19])))
    started = start_time(root)
    if started is None:
        return set()
    found, todo = set(), [(root, started)]
    while todo:
        process = todo.pop()
        found.add(process)
        todo += children.get(process[0], [])
    return found


def alive(processes: set[tuple[int, int]]) -> set[tuple[int, int]]:
    """Those of `processes` still running (a zombie counts as gone: harness.ownership's `alive`)."""
    return {process for process in processes if still_running(*process)}


def command_lines(processes: set[tuple[int, int]]) -> list[bytes]:
    """Each process's command line (NUL-separated), for those still there."""
    lines = []
    for pid, _ in processes:
        try:
            lines.append(Path(f"/proc/{pid}/cmdline").read_bytes())
        except OSError:
            pass
    return lines


def names(processes: set[tuple[int, int]]) -> list[str]:
    """Each process's name (/proc/PID/comm), for those still there."""
    found = []
    for pid, _ in processes:
        try:
            found.append(Path(f"/proc/{pid}/comm").read_text().strip())
        except OSError:
            pass
    return found
