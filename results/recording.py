"""The run directory, as it is recorded (docs/organisation.md, "The history"): the live `history.jsonl`
writer, loading a run's tables back (their columns and types are
`history/schema.py`'s), and the names runs go by.

`history.jsonl` is flushed row by row and is the source of truth if the
harness dies mid-run; `recover` rebuilds the Parquet files from it.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pa_json
import pyarrow.parquet as pq

from history.errors import Defect, HistoryError
from history.schema import EVENTS_COLUMNS, FINAL_COLUMNS, HISTORY_COLUMNS, OP_TYPES, TEXT, frame


class HistoryRecorder:
    """Appends history rows to `history.jsonl`, flushed as it goes. Times are
    nanoseconds since the recorder started, on the harness's monotonic clock.
    The file is the one record: the checkers that judge the run while it
    goes read its new lines (harness/live.py)."""

    def __init__(self, run_dir: Path) -> None:
        self.path = Path(run_dir) / "history.jsonl"
        self.file = open(self.path, "a", encoding="utf-8")
        self.start_ns = time.monotonic_ns()
        self.wall_start_ns = time.time_ns()
        self.rows = 0
        # So far: the clients' operations answered, those ok, and the faults called (a soak's progress).
        self.tally = {"operations": 0, "ok": 0, "faults": 0}
        # Each row is flushed as it is written, but while `flushing` runs (the
        # load) at most every so often: a flush per row was a tenth of the
        # harness's CPU at 10,000 operations a second.
        self.flush_every_ns = 0
        self.flushed_ns = 0
        # Client tasks and the nemesis thread record concurrently.
        self.lock = threading.Lock()

    def now_ns(self) -> int:
        return time.monotonic_ns() - self.start_ns

    def wall_to_run_ns(self, wall_ns: int) -> int:
        """A wall-clock timestamp (from a node's event log) on the run's clock."""
        return wall_ns - self.wall_start_ns

    def record(self, process: int, type: str, f: str, **fields) -> dict:
        if type not in OP_TYPES:
            raise Defect(f"history row type must be one of {OP_TYPES}, not {type!r}")
        with self.lock:
            return self._record(process, type, f, fields)

    def _record(self, process: int, type: str, f: str, fields: dict) -> dict:
        now_ns = self.now_ns()
        row = {"index": self.rows, "time_ns": now_ns, "process": process, "type": type, "f": f}
        for name, value in fields.items():
            if name not in HISTORY_COLUMNS:
                raise Defect(f"history has no column {name!r}")
            if value is not None:
                row[name] = value if HISTORY_COLUMNS[name] != TEXT or isinstance(value, str) else json.dumps(value)
        self.file.write(json.dumps(row) + "\n")
        if now_ns - self.flushed_ns >= self.flush_every_ns:
            self._flush(now_ns)
        self.rows += 1
        if process < 0:
            self.tally["faults"] += type == "invoke"
        elif type != "invoke":
            self.tally["operations"] += 1
            self.tally["ok"] += type == "ok"
        return row

    def _flush(self, now_ns: int) -> None:
        self.file.flush()
        self.flushed_ns = now_ns

    async def flushing(self, interval_s: float) -> None:
        """Until cancelled (and `flush_each_row` is called), rows are flushed
        together, at most `interval_s` after they were recorded: a crash
        loses at most that moment of the history."""
        self.flush_every_ns = int(interval_s * 1e9)
        while True:
            await asyncio.sleep(interval_s)
            with self.lock:
                self._flush(self.now_ns())

    def flush_each_row(self) -> None:
        """What is written so far flushed, and from now on each row as it is written."""
        with self.lock:
            self.flush_every_ns = 0
            self._flush(self.now_ns())

    def close(self) -> None:
        if not self.file.closed:
            self.file.flush()
            os.fsync(self.file.fileno())
            self.file.close()


# A history.jsonl is read this much at a time (about 500,000 rows): a
# soak's 13.2M rows, read whole as a dict a row, were 16.8 GB.
PIECE_BYTES = 64 << 20


def jsonl_pieces(path: Path, piece_bytes: int = PIECE_BYTES) -> Iterator[tuple[pd.DataFrame, str | None]]:
    """A history.jsonl as typed frames of its whole lines, about `piece_bytes`
    of the file each, so memory holds a piece and not the file. Each is read
    by Arrow's JSON reader where it can be (`lines_table`), else line by line
    (`rows_table`): a torn last line (a write cut short by a crash) is left
    out and described in the second value; any other bad line raises
    `HistoryError` naming the file and line."""
    first, rest = 1, b""
    try:
        with open(path, "rb") as file:
            while block := file.read(piece_bytes):
                data = rest + block
                cut = data.rfind(b"\n") + 1
                data, rest = data[:cut], data[cut:]
                if data:
                    yield _piece(path, data, first)
                    first += data.count(b"\n")
    except OSError as error:
        raise HistoryError(f"{path}: unreadable: {error}") from None
    if rest.strip():
        yield _piece(path, rest, first)


def _piece(path: Path, data: bytes, first: int) -> tuple[pd.DataFrame, str | None]:
    table = lines_table(data) if data.endswith(b"\n") else None
    if table is not None:
        return table, None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise HistoryError(f"{path}: unreadable: {error}") from None
    return rows_table(text, first, path)


def rows_table(text: str, first: int, path: Path) -> tuple[pd.DataFrame, str | None]:
    """Lines of a history.jsonl, the first numbered `first`, read a dict a
    row (as `jsonl_pieces` reads what Arrow cannot). Only a last line with no
    newline after it can be torn."""
    rows: list[dict] = []
    torn = None
    lines = text.split("\n")
    for number, line in enumerate(lines, start=first):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            problem = None if isinstance(row, dict) else "not a JSON object"
        except ValueError as error:
            problem = str(error)
        if problem is not None:
            if number - first == len(lines) - 1:
                torn = f"{path}: line {number}: torn last line left out ({problem})"
                continue
            raise HistoryError(f"{path}: line {number}: {problem}")
        problem = _type_problem(row, HISTORY_COLUMNS)
        if problem:
            raise HistoryError(f"{path}: line {number}: {problem}")
        rows.append(row)
    return frame(rows, HISTORY_COLUMNS), torn


REQUIRED = {"index", "time_ns", "process", "type", "f"}


def _type_problem(row: dict, columns: dict[str, str]) -> str | None:
    """Why a row does not fit the table's columns, or None."""
    for name, dtype in columns.items():
        value = row.get(name)
        if value is None:
            if name in REQUIRED and columns is HISTORY_COLUMNS:
                return f"{name}: missing"
            continue
        if dtype in ("int64", "Int64") and (
            isinstance(value, bool) or not isinstance(value, int) or abs(value) >= 2**63
        ):
            return f"{name}: {value!r} is not an integer"
        if dtype == "boolean" and not isinstance(value, bool):
            return f"{name}: {value!r} is not true or false"
    if columns is HISTORY_COLUMNS and row["type"] not in OP_TYPES:
        return f"type: {row['type']!r} is not one of {', '.join(OP_TYPES)}"
    if columns is HISTORY_COLUMNS and not isinstance(row["f"], str):
        return f"f: {row['f']!r} is not a name"
    return None


def load_history(run_dir: Path, warnings: list[str] | None = None) -> pd.DataFrame:
    """The history of a run: its Parquet file, or `history.jsonl` after a
    crash (a torn last line is left out, and said in `warnings`)."""
    run_dir = Path(run_dir)
    parquet = run_dir / "history.parquet"
    if parquet.exists():
        return read_table(parquet, HISTORY_COLUMNS)
    jsonl = run_dir / "history.jsonl"
    if not jsonl.exists():
        raise HistoryError(f"{run_dir}: no history.parquet or history.jsonl")
    pieces = list(jsonl_pieces(jsonl))
    if warnings is not None:
        warnings += [torn for _, torn in pieces if torn]
    return pd.concat([piece for piece, _ in pieces], ignore_index=True) if pieces else frame([], HISTORY_COLUMNS)


_ARROW_SCHEMA = pa.schema(
    [
        (name, {"int64": pa.int64(), "Int64": pa.int64(), "boolean": pa.bool_()}.get(dtype, pa.string()))
        for name, dtype in HISTORY_COLUMNS.items()
    ]
)


def lines_table(data: bytes) -> pd.DataFrame | None:
    """Whole lines of a history.jsonl as a table, read by Arrow's JSON reader
    (a tenth of the time of a dict a row); None where they cannot be read so
    (a torn or bad line, a value of another type, a missing column or a type
    of row not known), for the line by line reading to leave out or name."""
    if not data:
        return frame([], HISTORY_COLUMNS)
    if not data.startswith(b"{") or data.count(b"\n{") != data.count(b"\n") - 1:
        return None  # a line that is not an object: pyarrow 26's reader crashes the process on a line `null`
    options = pa_json.ParseOptions(explicit_schema=_ARROW_SCHEMA, unexpected_field_behavior="error")
    try:
        table = pa_json.read_json(pa.BufferReader(data), parse_options=options)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    known_types = pc.all(pc.is_in(table["type"], value_set=pa.array(list(OP_TYPES)))).as_py()
    if not known_types or any(table[name].null_count for name in REQUIRED):
        return None
    return table.to_pandas(types_mapper=_ARROW_TYPES.get).astype(HISTORY_COLUMNS)


# Arrow's buffers come from the C library's allocator, not the mimalloc that
# pyarrow bundles and takes by default: mimalloc hands pages back and faults
# them in again, and on `splitbrain check` of a 7.1M-row run the kernel spent
# twice the time zeroing pages (2.4-3.1 s against 1.1-1.4 s; 4.5-5.2 s wall
# against 3.8-4.3 s, 4 interleaved runs each). A pool the user names wins.
if "ARROW_DEFAULT_MEMORY_POOL" not in os.environ:
    pa.set_memory_pool(pa.system_memory_pool())

# Arrow's types as the contract's, straight from the file: strings stay in
# Arrow memory (the pandas metadata of a file pandas wrote would make them
# Python objects first: 2 s for 5M final rows), integers stay exact.
_ARROW_TYPES = {
    pa.string(): pd.StringDtype("pyarrow"),
    pa.large_string(): pd.StringDtype("pyarrow"),
    pa.int64(): pd.Int64Dtype(),
    pa.bool_(): pd.BooleanDtype(),
}


def read_table(path: Path, columns: dict[str, str]) -> pd.DataFrame:
    """A run's Parquet table in the contract's types. Columns it was written
    without (an older run) are null; columns of Parquet's null type (pandas
    writes an all-None column so) get the contract's type; anything that
    cannot be read or cast is a `HistoryError` naming file and column."""
    try:
        table = pq.read_table(path)
    except Exception as error:  # pyarrow raises several types for a damaged file
        raise HistoryError(f"{path}: unreadable: {error}") from None
    return typed(table, columns, path)


def typed(table: pa.Table, columns: dict[str, str], path: Path) -> pd.DataFrame:
    """Rows read from the Parquet table at `path` (all of it, or a piece) in the contract's types (`read_table`)."""
    try:
        frame = table.to_pandas(types_mapper=_ARROW_TYPES.get)
    except Exception as error:
        raise HistoryError(f"{path}: unreadable: {error}") from None
    for name, dtype in columns.items():
        if name not in frame:
            if name in REQUIRED and columns is HISTORY_COLUMNS:
                raise HistoryError(f"{path}: no column {name!r}")
            frame[name] = pd.Series(pd.NA, index=frame.index, dtype=dtype)
        elif str(frame[name].dtype) != dtype:
            try:
                frame[name] = frame[name].astype(dtype)
            except (ValueError, TypeError, OverflowError) as error:
                raise HistoryError(f"{path}: column {name!r} is not {dtype}: {error}") from None
    return frame


TABLES = {"history.parquet": HISTORY_COLUMNS, "events.parquet": EVENTS_COLUMNS, "final.parquet": FINAL_COLUMNS}


def recover(run_dir: Path) -> str | None:
    """Write `history.parquet` from `history.jsonl` (at a run's end, and after
    a crash), a piece at a time (`jsonl_pieces`), each piece a row group or
    more; returns the note about a torn last line, if there was one."""
    run_dir = Path(run_dir)
    staged, torn = run_dir / "history.parquet.part", None
    try:
        with pq.ParquetWriter(staged, _ARROW_SCHEMA) as writer:
            for piece, note in jsonl_pieces(run_dir / "history.jsonl"):
                writer.write_table(pa.Table.from_pandas(piece, schema=_ARROW_SCHEMA, preserve_index=False))
                torn = note or torn
    except BaseException:
        staged.unlink(missing_ok=True)
        raise
    staged.replace(run_dir / "history.parquet")
    return torn


PARTIAL = ".partial"


def partial(run_dir: Path) -> Path:
    """The name a run directory has until it is complete (has its verdict)."""
    return run_dir.with_name(run_dir.name + PARTIAL)


def complete(run_dir: Path) -> Path:
    """Give a finished run directory (verdict written) its own name; returns it."""
    run_dir = Path(run_dir)
    if not run_dir.name.endswith(PARTIAL):
        return run_dir
    final = run_dir.with_name(run_dir.name.removesuffix(PARTIAL))
    run_dir.rename(final)
    return final


def find_run_dirs(paths: list[Path]) -> list[Path]:
    """Each path is a run directory, or a folder of them (one level down).
    In a folder, runs still going or cut short (`*.partial`) are left out:
    name one to read it."""
    found = []
    for path in map(Path, paths):
        if is_run(path):
            found.append(path)
            continue
        if not path.exists():
            raise HistoryError(f"{path}: no such file or folder")
        inside = (
            sorted(p for p in path.iterdir() if p.is_dir() and is_run(p) and not p.name.endswith(PARTIAL))
            if path.is_dir()
            else []
        )
        if not inside:
            raise HistoryError(f"{path}: no run directories here")
        found += inside
    return found


def is_run(path: Path) -> bool:
    return any((path / name).exists() for name in ("run.json", "verdict.json", "history.jsonl", "history.parquet"))
