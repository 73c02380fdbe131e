"""Runs every checker over a run directory's tables and merges the verdict."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from results.history import EVENTS_COLUMNS, FINAL_COLUMNS, frame, load_history

from .availability import availability
from .data_loss import committed_data_loss
from .elections import election_safety, single_leader_per_epoch
from .linearizable import linearizable
from .result import merge, run_checker


def _table(path: Path, columns: dict) -> pd.DataFrame:
    return pd.read_parquet(path) if path.exists() else frame([], columns)


def check_tables(history: pd.DataFrame, events: pd.DataFrame, final: pd.DataFrame) -> dict:
    results = {
        "election-safety": run_checker(election_safety, events),
        "single-leader-per-epoch": run_checker(single_leader_per_epoch, events, history),
    }
    if (history["f"] == "append").any():
        results["committed-data-loss"] = run_checker(committed_data_loss, history, final, events)
    if history["f"].isin(["read", "write", "cas"]).any():
        results["linearizable"] = run_checker(linearizable, history)
    results["availability"] = run_checker(availability, history, events)
    return merge(results)


def check_run(run_dir: Path) -> dict:
    run_dir = Path(run_dir)
    history = load_history(run_dir)
    events = _table(run_dir / "events.parquet", EVENTS_COLUMNS)
    final = _table(run_dir / "final.parquet", FINAL_COLUMNS)
    return check_tables(history, events, final)
