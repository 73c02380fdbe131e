"""Runs every checker that applies over a run's tables and merges the verdict
(pure: `results/checking.py` reads the run directory)."""

from __future__ import annotations

import pandas as pd

from .availability import availability
from .coverage import coverage
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
        "election-safety": run_checker(election_safety, events, capabilities),
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
    verdict = merge(results)
    # Not a checker: what the faults tried (checkers/coverage.py), for the report and the campaign.
    try:
        verdict["coverage"] = coverage(history, events)
    except Exception as error:  # as with a checker: a bug here must not lose the verdicts
        verdict["coverage"] = {"cells": [], "hit": 0, "error": f"{type(error).__name__}: {error}"}
    return verdict


def check_imported(history: pd.DataFrame, model_spec: dict, budget_s: float = DEFAULT_BUDGET_S) -> dict:
    """A history from another tool has no node events: only the model checker applies."""
    model = make_model(model_spec["name"], model_spec.get("initial"))
    return merge({"linearizable": run_checker(linearizable, history, model, budget_s)})
