"""Processes as /proc shows them, each named by (pid, start time) so that
a pid reused later is not mistaken for it: a process's tree, which of a
set are still running, and their command lines. What a Spark campaign waits
on, and what its tests check is gone."""

from __future__ import annotations

from pathlib import Path


def _stat(pid: int | str) -> list[str] | None:
    """/proc/PID/stat's fields after the command's name (state, parent, ...), or None when it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None


def descendants(root: int) -> set[tuple[int, str]]:
    """`root` and every process below it, from /proc's parent links, each
    as (pid, start time): a pid reused later is not mistaken for it."""
    children: dict[int, list[tuple[int, str]]] = {}
    for entry in Path("/proc").iterdir():
        fields = _stat(entry.name) if entry.name.isdigit() else None
        if fields:
            children.setdefault(int(fields[1]), []).append((int(entry.name), fields[19]))
    root_fields = _stat(root)
    if root_fields is None:
        return set()
    found, todo = set(), [(root, root_fields[19])]
    while todo:
        process = todo.pop()
        found.add(process)
        todo += children.get(process[0], [])
    return found


def alive(processes: set[tuple[int, str]]) -> set[tuple[int, str]]:
    """Those of `processes` still running (a zombie counts as gone)."""
    running = set()
    for pid, started in processes:
        fields = _stat(pid)
        if fields and fields[19] == started and fields[0] != "Z":
            running.add((pid, started))
    return running


def command_lines(processes: set[tuple[int, str]]) -> list[bytes]:
    """Each process's command line (NUL-separated), for those still there."""
    lines = []
    for pid, _ in processes:
        try:
            lines.append(Path(f"/proc/{pid}/cmdline").read_bytes())
        except OSError:
            pass
    return lines


def names(processes: set[tuple[int, str]]) -> list[str]:
    """Each process's name (/proc/PID/comm), for those still there."""
    found = []
    for pid, _ in processes:
        try:
            found.append(Path(f"/proc/{pid}/comm").read_text().strip())
        except OSError:
            pass
    return found
