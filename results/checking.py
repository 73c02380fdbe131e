"""A run directory's verdict: its tables read (a crashed run's torn last line
left out and named), then every checker that applies (`checkers/verdict.py`)."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from checkers.verdict import DEFAULT_BUDGET_S, check_imported, check_tables
from history.schema import EVENTS_COLUMNS, FINAL_COLUMNS, frame

from .recording import HistoryError, load_history, read_table


def _table(path: Path, columns: dict) -> pd.DataFrame:
    """A run's table, or an empty one where the run has none."""
    return read_table(path, columns) if path.exists() else frame([], columns)


def check_and_record(run_dir: Path, budget_s: float = DEFAULT_BUDGET_S, piece_rows: int | None = None) -> dict:
    """Check a run directory and write what people read: verdict.json and
    report.html. The report's drawing, which needs only the history and the
    events, is made on a thread beside the final log's read and the checkers.
    A history longer than `piece_rows` is checked in pieces (results/pieces.py)."""
    from .pieces import PIECE_ROWS, check_in_pieces, in_pieces
    from .report import Drawing, write_report

    run_dir = Path(run_dir)
    meta = run_meta(run_dir)
    piece_rows = piece_rows or PIECE_ROWS
    if "source" not in meta and in_pieces(run_dir, piece_rows):
        checked = check_in_pieces(run_dir, meta.get("capabilities"), budget_s, piece_rows)
        verdict, history, events, drawing = checked.verdict, checked.history, checked.events, checked.drawing
    else:
        run = _read(run_dir, meta)
        history, events = run.history, run.events
        with ThreadPoolExecutor(max_workers=1) as pool:
            drawn = pool.submit(Drawing, history, events)
            verdict = _verdict(run, budget_s)
        drawing = drawn.result()
    (run_dir / "verdict.json").write_text(json.dumps(verdict, indent=2, default=str) + "\n")
    write_report(run_dir, history, events, drawing)
    return verdict


def check_run(run_dir: Path, budget_s: float = DEFAULT_BUDGET_S) -> dict:
    """The verdict of a run directory. A torn last line of a crashed run's
    history.jsonl is left out, and the verdict says so: `warnings` names the
    line and `stats.torn_lines` counts it."""
    return _verdict(_read(Path(run_dir), run_meta(Path(run_dir))), budget_s)


@dataclass
class _Run:
    """A run directory's history and events, read; its final log is read by `_verdict`."""

    path: Path
    meta: dict
    history: pd.DataFrame
    events: pd.DataFrame
    warnings: list[str]


def _read(run_dir: Path, meta: dict) -> _Run:
    warnings: list[str] = []
    history = load_history(run_dir, warnings)
    return _Run(run_dir, meta, history, _table(run_dir / "events.parquet", EVENTS_COLUMNS), warnings)


def _verdict(run: _Run, budget_s: float) -> dict:
    if "source" in run.meta:
        verdict = check_imported(run.history, run.meta["model"], budget_s)
    else:
        final = _table(run.path / "final.parquet", FINAL_COLUMNS)
        verdict = check_tables(run.history, run.events, final, budget_s, run.meta.get("capabilities"))
    verdict["stats"] = {"history_rows": len(run.history), "torn_lines": len(run.warnings)}
    if run.warnings:
        verdict["warnings"] = run.warnings
    return verdict


def run_meta(run_dir: Path) -> dict:
    """run.json, checked to be a run description ({} where there is none); HistoryError names what is wrong."""
    path = run_dir / "run.json"
    if not path.exists():
        return {}
    try:
        meta = json.loads(path.read_text())
    except ValueError as error:
        raise HistoryError(f"{path}: not JSON: {error}") from None
    if (
        not isinstance(meta, dict)
        or ("source" in meta and not isinstance(meta.get("model"), dict))
        or not isinstance(meta.get("capabilities", {}), dict)
    ):
        raise HistoryError(f"{path}: not a run description (an object, with a model if imported)")
    return meta
