"""A run directory too large to hold, checked in bounded memory: its
history.parquet read a piece of PIECE_ROWS rows at a time (checkers/pieces.py
judges them), then its acknowledged appends and final logs a window of
places at a time, each read with a filter that Parquet's row-group
statistics answer (a run writes its tables in time order and each node's
log in offset order, so a window reads little more than its own rows).

A run goes this way when its history has more than PIECE_ROWS rows; a
shorter one is read whole (results/checking.py), and both give the same
verdict (tests/results/test_pieces.py checks it on real runs).
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from checkers.availability import fault_windows
from checkers.checker import Result
from checkers.data_loss import NAME as DATA_LOSS
from checkers.data_loss import committed_data_loss_in_windows, value_hashes
from checkers.linearizable import NAME as LINEARIZABLE
from checkers.pieces import InPieces
from checkers.progress import run_ended
from checkers.verdict import check
from history.schema import EVENTS_COLUMNS, FINAL_COLUMNS, HISTORY_COLUMNS, frame, holds

from .recording import HistoryError, read_table, typed
from .report import MAX_ROWS, Drawing, Operations, rows_named

PIECE_ROWS = 500_000


def in_pieces(run_dir: Path, piece_rows: int = PIECE_ROWS) -> bool:
    """Whether the run's history is long enough to be checked in pieces."""
    path = run_dir / "history.parquet"  # (read before a history.jsonl beside it, as `load_history` reads it)
    return path.exists() and _open(path).metadata.num_rows > piece_rows


@dataclass
class Checked:
    """A run checked in pieces: its verdict, and what its report draws."""

    verdict: Result
    history: pd.DataFrame
    events: pd.DataFrame
    drawing: Drawing


def check_in_pieces(run_dir: Path, capabilities: Any, budget_s: float, piece_rows: int = PIECE_ROWS) -> Checked:
    history_path, final_path = run_dir / "history.parquet", run_dir / "final.parquet"
    events = (
        read_table(run_dir / "events.parquet", EVENTS_COLUMNS)
        if (run_dir / "events.parquet").exists()
        else frame([], EVENTS_COLUMNS)
    )
    file = _open(history_path)
    tail = file.read_row_group(file.num_row_groups - 1)
    last = _rows(history_path, tail.slice(max(tail.num_rows - 1, 0)))
    nemesis = _where(history_path, HISTORY_COLUMNS, pc.field("process") < 0)
    windows = fault_windows(pd.concat([nemesis, last], ignore_index=True))
    end_ns = int(last["time_ns"].iat[0]) if len(last) else 0
    ops = Operations(run_ended(end_ns, events))
    pieces = InPieces(windows, budget_s, on_pairs=[ops.add])
    # The final logs' windows on a thread beside the history's pieces: each is mostly Parquet and numpy.
    with ThreadPoolExecutor(max_workers=1) as pool:
        lost = pool.submit(_data_loss, history_path, final_path, events, piece_rows)
        for batch in file.iter_batches(batch_size=piece_rows):
            pieces.add(_rows(history_path, pa.Table.from_batches([batch])))
        data_loss = lost.result()
    waiting = pieces.never_answered()
    ops.end(waiting, np.arange(len(waiting)))
    # The two checkers that need every row judged the pieces as they passed; the others judge the rows left.
    given = {LINEARIZABLE: pieces.linearizable, DATA_LOSS: data_loss}
    named = _where(history_path, HISTORY_COLUMNS, pc.field("index").isin(sorted(_named(given.values()))))
    tables = pieces.tables(events, capabilities, named, partial(_small_final, final_path))
    verdict = check(tables, {name: partial(_as_found, found) for name, found in given.items() if found is not None})
    verdict["stats"] = {"history_rows": pieces.rows, "torn_lines": 0, "pieces": pieces.pieces}
    # The report lists the rows every anomaly names, and the other row of each one's operation.
    flagged = _named(verdict["checkers"].values())
    head = ops.head[ops.head["invoke"].isin(flagged) | ops.head["index"].isin(flagged)]
    shown = sorted(flagged | set(head["invoke"]) | set(head["index"][head["index"] >= 0]))[:MAX_ROWS]
    listed = _where(history_path, HISTORY_COLUMNS, pc.field("index").isin(shown))
    return Checked(verdict, pieces.history(pd.concat([named, listed])), events, Drawing(tables.history, events, ops))


def _as_found(found: Result) -> Result:
    return found


def _open(path: Path) -> pq.ParquetFile:
    """The Parquet file, read without pre-buffering: a pre-buffering reader
    keeps what it read of the file until it is done with it, so its memory grew with the file."""
    try:
        return pq.ParquetFile(path, pre_buffer=False)
    except Exception as error:  # pyarrow raises several types for a damaged file
        raise HistoryError(f"{path}: unreadable: {error}") from None


def _rows(path: Path, table: pa.Table, columns: dict[str, str] = HISTORY_COLUMNS) -> pd.DataFrame:
    return typed(table, columns, path)[list(columns)]


def _where(path: Path, columns: dict[str, str], condition: ds.Expression) -> pd.DataFrame:
    """The rows of a run's table that meet `condition` (row groups whose statistics rule it out are not read)."""
    if not path.exists():
        return frame([], columns)
    try:
        table = ds.dataset(path, format="parquet").to_table(filter=condition)
    except Exception as error:  # pyarrow raises several types for a damaged file
        raise HistoryError(f"{path}: unreadable: {error}") from None
    return _rows(path, table, columns)


def _named(results: Any) -> set[int]:
    """The history rows the anomalies of these results name."""
    return {row for found in results for anomaly in (found or {}).get("anomalies", []) for row in rows_named(anomaly)}


def _small_final(path: Path, history: pd.DataFrame) -> pd.DataFrame:
    """What the checkers that judge once read of the final logs: the lists
    of the keys the rows left name (locks' guarded lists, left whole), and
    the records the quorum wrote itself (`{`: voter changes)."""
    keys = sorted(history["key"].dropna().unique())
    wanted = pc.starts_with(pc.field("value"), pattern="{")
    if keys and path.exists() and pa.types.is_string(pq.read_schema(path).field("key").type):
        wanted |= pc.field("key").isin(keys)
    return _where(path, FINAL_COLUMNS, wanted)


def _data_loss(history_path: Path, final_path: Path, events: pd.DataFrame, piece_rows: int) -> Result:
    """`committed-data-loss` a window of offsets at a time."""
    appends = (pc.field("f") == "append") & (pc.field("process") >= 0)
    failed = _where(history_path, HISTORY_COLUMNS, appends & (pc.field("type") == "fail"))
    gone = _where(final_path, FINAL_COLUMNS, pc.field("offset").is_null())
    acked = _Groups(history_path, HISTORY_COLUMNS, ["index", "process", "type", "f", "key", "value", "offset"])
    logs = _Groups(final_path, FINAL_COLUMNS, list(FINAL_COLUMNS))
    nodes = _final_nodes(final_path)
    low, high = min(acked.low, logs.low), max(acked.high, logs.high)
    step = max(1, piece_rows // max(len(nodes), 1))

    def windows() -> Iterator[tuple[pd.DataFrame, pd.DataFrame]]:
        for start in range(low, high + 1, step):
            history = acked.between(start, start + step)
            history = history[holds(history["f"], ["append"]) & (history["process"] >= 0).to_numpy()]
            final = logs.between(start, start + step)
            absent = sorted(set(nodes) - set(final["node"].dropna().unique()) - set(gone["node"].dropna()))
            marks = frame([{"node": node} for node in absent], FINAL_COLUMNS)
            yield history, pd.concat([final, gone, marks], ignore_index=True)

    def holding(hashes: np.ndarray) -> pd.DataFrame:
        found = []
        for batch in _open(final_path).iter_batches(batch_size=piece_rows):
            rows = _rows(final_path, pa.Table.from_batches([batch]), FINAL_COLUMNS)
            found.append(rows[np.isin(value_hashes(rows["value"]), hashes)])
        return pd.concat(found, ignore_index=True) if found else frame([], FINAL_COLUMNS)

    return committed_data_loss_in_windows(windows(), failed, events, holding)


class _Groups:
    """A run table's rows by offset, for windows of offsets in ascending
    order: each row group is read once, when the first window it may hold
    rows of comes (its statistics say which offsets it holds; one without
    them may hold any), and let go once the windows are past its highest."""

    def __init__(self, path: Path, columns: dict[str, str], names: list[str]) -> None:
        self.path = path
        self.columns = {name: columns[name] for name in names}
        self.file: pq.ParquetFile | None = _open(path) if path.exists() else None
        self.spans = self._spans(self.file) if self.file else []
        held = [span for span in self.spans if span[0] <= span[1]]
        self.low = min((low for low, _ in held), default=0)
        self.high = max((high for _, high in held), default=-1)
        self.read: dict[int, pd.DataFrame] = {}

    @staticmethod
    def _spans(file: pq.ParquetFile) -> list[tuple[int, int]]:
        """Each row group's lowest and highest offset (an empty span where it
        holds none): from its statistics, or, where it has none, from its
        offsets read (a span of every offset would make windows without end)."""
        written = file.schema_arrow.names
        if "offset" not in written:
            return [(1, 0)] * file.num_row_groups
        spans = []
        for group in range(file.num_row_groups):
            chunk = file.metadata.row_group(group)
            stats = chunk.column(written.index("offset")).statistics
            if stats is not None and stats.has_null_count and stats.null_count == chunk.num_rows:
                spans.append((1, 0))
            elif stats is not None and stats.has_min_max:
                spans.append((int(stats.min), int(stats.max)))
            else:
                bounds = pc.min_max(file.read_row_group(group, columns=["offset"]).column("offset"))
                low, high = bounds["min"].as_py(), bounds["max"].as_py()
                spans.append((1, 0) if low is None else (int(low), int(high)))
        return spans

    def between(self, low: int, high: int) -> pd.DataFrame:
        """The rows whose offset is at least `low` and under `high`."""
        for group in [g for g in self.read if self.spans[g][1] < low]:
            del self.read[group]
        parts = []
        for group, (first, last) in enumerate(self.spans):
            if first < high and last >= low:
                rows = self.read.get(group)
                if rows is None:
                    rows = self.read[group] = self._group(group)
                offset = rows["offset"].to_numpy(dtype="int64")
                parts.append(rows[(offset >= low) & (offset < high)])
        return pd.concat(parts, ignore_index=True) if parts else frame([], self.columns)

    def _group(self, group: int) -> pd.DataFrame:
        """A row group's rows that have an offset."""
        assert self.file is not None  # (a group to read is one of its file's)
        written = self.file.schema_arrow.names
        table = self.file.read_row_group(group, columns=[name for name in self.columns if name in written])
        rows = typed(table, self.columns, self.path)
        return rows[rows["offset"].notna().to_numpy()].reset_index(drop=True)


def _final_nodes(path: Path) -> list[str]:
    """The nodes of the final logs."""
    if not path.exists():
        return []
    nodes: set[str] = set()
    for batch in _open(path).iter_batches(columns=["node"]):
        nodes |= set(pc.unique(batch.column("node")).drop_null().to_pylist())
    return sorted(nodes)
