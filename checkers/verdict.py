"""Runs every checker that applies over a run directory's tables and merges the verdict."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from results.history import EVENTS_COLUMNS, FINAL_COLUMNS, HistoryError, frame, load_history, read_table

from .availability import availability
from .data_loss import committed_data_loss
from .elections import election_safety, single_leader_per_epoch
from .linearizable import linearizable
from .membership import CHANGES, membership
from .models import make_model
from .mutex import LOCK_FS, mutual_exclusion
from .result import merge, run_checker

DEFAULT_BUDGET_S = 30.0
# Every checker a verdict may hold (DESIGN.md, "Verdicts").
CHECKERS = ("election-safety", "single-leader-per-epoch", "committed-data-loss", "linearizable", "membership",
            "mutual-exclusion", "availability")  # fmt: skip


def _table(path: Path, columns: dict) -> pd.DataFrame:
    """A run's table, or an empty one where the run has none."""
    return read_table(path, columns) if path.exists() else frame([], columns)


def check_tables(
    history: pd.DataFrame,
    events: pd.DataFrame,
    final: pd.DataFrame,
    budget_s: float = DEFAULT_BUDGET_S,
    capabilities: dict | None = None,
) -> dict:
    """Every checker that applies. `capabilities` are what the run's target
    declared (run.json); checkers read them instead of assuming a target."""
    results = {
        "election-safety": run_checker(election_safety, events),
        "single-leader-per-epoch": run_checker(single_leader_per_epoch, events, history, capabilities),
    }
    client_fs = set(history.loc[history["process"] >= 0, "f"].dropna().unique())
    if "append" in client_fs:
        results["committed-data-loss"] = run_checker(committed_data_loss, history, final, events)
    if client_fs & LOCK_FS:
        results["mutual-exclusion"] = run_checker(mutual_exclusion, history, final)
    elif client_fs:
        results["linearizable"] = run_checker(linearizable, history, None, budget_s)
    if (events["event"] == "voters").any() or history["f"].isin(CHANGES).any():
        results["membership"] = run_checker(membership, history, events, final)
    results["availability"] = run_checker(availability, history, events)
    return merge(results)


def check_imported(history: pd.DataFrame, model_spec: dict, budget_s: float = DEFAULT_BUDGET_S) -> dict:
    """A history from another tool has no node events: only the model checker applies."""
    model = make_model(model_spec["name"], model_spec.get("initial"))
    return merge({"linearizable": run_checker(linearizable, history, model, budget_s)})


def check_run(run_dir: Path, budget_s: float = DEFAULT_BUDGET_S) -> dict:
    """The verdict of a run directory. A torn last line of a crashed run's
    history.jsonl is left out, and the verdict says so: `warnings` names the
    line and `stats.torn_lines` counts it."""
    run_dir = Path(run_dir)
    warnings: list[str] = []
    history = load_history(run_dir, warnings)
    meta = _run_meta(run_dir)
    if "source" in meta:
        verdict = check_imported(history, meta["model"], budget_s)
    else:
        events = _table(run_dir / "events.parquet", EVENTS_COLUMNS)
        final = _table(run_dir / "final.parquet", FINAL_COLUMNS)
        verdict = check_tables(history, events, final, budget_s, meta.get("capabilities"))
    verdict["stats"] = {"history_rows": len(history), "torn_lines": len(warnings)}
    if warnings:
        verdict["warnings"] = warnings
    return verdict


def _run_meta(run_dir: Path) -> dict:
    path = run_dir / "run.json"
    if not path.exists():
        return {}
    try:
        meta = json.loads(path.read_text())
    except ValueError as error:
        raise HistoryError(f"{path}: not JSON: {error}") from None
    if not isinstance(meta, dict) or ("source" in meta and not isinstance(meta.get("model"), dict)) or not isinstance(
        meta.get("capabilities", {}), dict
    ):
        raise HistoryError(f"{path}: not a run description (an object, with a model if imported)")
    return meta
