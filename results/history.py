"""The run directory's tables (DESIGN.md, "The history"): their columns and
types, the live `history.jsonl` writer, and loading a run back.

`history.jsonl` is flushed row by row and is the source of truth if the
harness dies mid-run; `recover` rebuilds the Parquet files from it.
"""

from __future__ import annotations

import json
import math
import os
import threading
import time
from pathlib import Path

import pandas as pd

# Text columns are Arrow-backed: the checkers' string work stays vectorised.
TEXT = "string[pyarrow]"

HISTORY_COLUMNS = {
    "index": "int64",
    "time_ns": "int64",
    "process": "int64",
    "type": TEXT,
    "f": TEXT,
    "key": TEXT,
    "value": TEXT,
    "node": TEXT,
    "epoch": "Int64",
    "leader": TEXT,
    "offset": "Int64",
    "error": TEXT,
}
EVENTS_COLUMNS = {
    "time_ns": "int64",
    "node": TEXT,
    "generation": "Int64",
    "event": TEXT,
    "state": TEXT,
    "epoch": "Int64",
    "leader": TEXT,
    "voted_for": TEXT,
    "candidate": TEXT,
    "offset": "Int64",
    "hwm": "Int64",
    "directory_id": TEXT,
    "voters": TEXT,
    "source": TEXT,
    # Beyond DESIGN.md's table, for the membership checker: the directory id
    # a vote request named for the voter (`vote`, `prevote`), and the mode of
    # an answered voter change (`voter-change-answered`).
    "as_directory": TEXT,
    "ack_when_committed": "boolean",
}
FINAL_COLUMNS = {"node": TEXT, "offset": "Int64", "epoch": "Int64", "value": TEXT}
OP_TYPES = ("invoke", "ok", "fail", "info")


class HistoryError(ValueError):
    """A run directory file that cannot be read; the message names file and row."""


def frame(rows: list[dict], columns: dict[str, str]) -> pd.DataFrame:
    """Rows as a DataFrame with exactly `columns`, typed (missing values are null)."""
    df = pd.DataFrame.from_records(rows, columns=list(columns))
    for name, dtype in columns.items():
        if dtype == TEXT:
            df[name] = df[name].map(_as_text)
        df[name] = df[name].astype(dtype)
    return df


def _as_text(value) -> str | None:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return value if isinstance(value, str) else json.dumps(value)


class HistoryRecorder:
    """Appends history rows to `history.jsonl`, flushed as it goes. Times are
    nanoseconds since the recorder started, on the harness's monotonic clock."""

    def __init__(self, run_dir: Path) -> None:
        self.path = Path(run_dir) / "history.jsonl"
        self.file = open(self.path, "a", encoding="utf-8")
        self.start_ns = time.monotonic_ns()
        self.wall_start_ns = time.time_ns()
        self.rows = 0
        # Client tasks and the nemesis thread record concurrently.
        self.lock = threading.Lock()

    def now_ns(self) -> int:
        return time.monotonic_ns() - self.start_ns

    def wall_to_run_ns(self, wall_ns: int) -> int:
        """A wall-clock timestamp (from a node's event log) on the run's clock."""
        return wall_ns - self.wall_start_ns

    def record(self, process: int, type: str, f: str, **fields) -> dict:
        if type not in OP_TYPES:
            raise ValueError(f"history row type must be one of {OP_TYPES}, not {type!r}")
        with self.lock:
            return self._record(process, type, f, fields)

    def _record(self, process: int, type: str, f: str, fields: dict) -> dict:
        row = {"index": self.rows, "time_ns": self.now_ns(), "process": process, "type": type, "f": f}
        for name, value in fields.items():
            if name not in HISTORY_COLUMNS:
                raise ValueError(f"history has no column {name!r}")
            if value is not None:
                row[name] = value if HISTORY_COLUMNS[name] != TEXT or isinstance(value, str) else json.dumps(value)
        self.file.write(json.dumps(row) + "\n")
        self.file.flush()
        self.rows += 1
        return row

    def close(self) -> None:
        if not self.file.closed:
            self.file.flush()
            os.fsync(self.file.fileno())
            self.file.close()


def read_jsonl(path: Path) -> tuple[list[dict], str | None]:
    """The rows of a JSON-lines file. A torn last line (a write cut short by a
    crash) is left out and described in the second value; any other bad line
    raises `HistoryError` naming the file and line."""
    rows: list[dict] = []
    torn = None
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    last = len(lines) - 1
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            if not isinstance(row, dict):
                raise ValueError("not a JSON object")
        except ValueError as error:
            if number - 1 == last:
                torn = f"{path}: line {number}: torn last line left out ({error})"
                continue
            raise HistoryError(f"{path}: line {number}: {error}") from None
        rows.append(row)
    return rows, torn


def load_history(run_dir: Path) -> pd.DataFrame:
    """The history of a run: its Parquet file, or `history.jsonl` after a crash."""
    run_dir = Path(run_dir)
    parquet = run_dir / "history.parquet"
    if parquet.exists():
        try:
            return pd.read_parquet(parquet)
        except Exception as error:  # pyarrow raises several types for a damaged file
            raise HistoryError(f"{parquet}: unreadable: {error}") from None
    jsonl = run_dir / "history.jsonl"
    if not jsonl.exists():
        raise HistoryError(f"{run_dir}: no history.parquet or history.jsonl")
    rows, _ = read_jsonl(jsonl)
    return frame(rows, HISTORY_COLUMNS)


def recover(run_dir: Path) -> str | None:
    """Write `history.parquet` from `history.jsonl` (after a crash); returns
    the note about a torn last line, if there was one."""
    run_dir = Path(run_dir)
    rows, torn = read_jsonl(run_dir / "history.jsonl")
    frame(rows, HISTORY_COLUMNS).to_parquet(run_dir / "history.parquet", index=False)
    return torn


def find_run_dirs(paths: list[Path]) -> list[Path]:
    """Each path is a run directory, or a folder of them (one level down)."""
    found = []
    for path in map(Path, paths):
        if _is_run(path):
            found.append(path)
            continue
        inside = sorted(p for p in path.iterdir() if p.is_dir() and _is_run(p)) if path.is_dir() else []
        if not inside:
            raise HistoryError(f"{path}: no run directories here")
        found += inside
    return found


def _is_run(path: Path) -> bool:
    return any((path / name).exists() for name in ("run.json", "verdict.json", "history.jsonl", "history.parquet"))
