"""Runs every checker that applies over a run's tables and merges the verdict
(pure: `results/checking.py` reads the run directory)."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

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
NO_FAULT = "no fault was made"
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
    declared (run.json); checkers read them instead of assuming a target.
    They run side by side on threads: each only reads the tables, and their
    work is mostly numpy and Arrow, which let go of the interpreter lock."""
    client_fs = set(history.loc[history["process"] >= 0, "f"].dropna().unique())
    applies = {"election-safety": (election_safety, events, capabilities),
               "single-leader-per-epoch": (single_leader_per_epoch, events, history, capabilities)}  # fmt: skip
    if "append" in client_fs:
        applies["committed-data-loss"] = (committed_data_loss, history, final, events)
    if client_fs & LOCK_FS:
        applies["mutual-exclusion"] = (mutual_exclusion, history, final)
    elif client_fs:
        applies["linearizable"] = (linearizable, history, None, budget_s)
    if (events["event"] == "voters").any() or history["f"].isin(CHANGES).any():
        applies["membership"] = (membership, history, events, final)
    applies["availability"] = (availability, history, events)
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        running = {name: pool.submit(run_checker, *call) for name, call in applies.items()}
        covered = pool.submit(_coverage, history, events)
        verdict = merge({name: future.result() for name, future in running.items()})
        # Not a checker: what the faults tried (checkers/coverage.py), for the report and the campaign.
        verdict["coverage"] = covered.result()
    verdict["faults_made"] = verdict["coverage"].get("faults")  # None: coverage could not tell
    if verdict["faults_made"] == 0:  # `valid` then says nothing of how the target takes faults
        verdict["note"] = NO_FAULT
    return verdict


def _coverage(history: pd.DataFrame, events: pd.DataFrame) -> dict:
    try:
        return coverage(history, events)
    except Exception as error:  # as with a checker: a bug here must not lose the verdicts
        return {"cells": [], "hit": 0, "error": f"{type(error).__name__}: {error}"}


def check_imported(history: pd.DataFrame, model_spec: dict, budget_s: float = DEFAULT_BUDGET_S) -> dict:
    """A history from another tool has no node events: only the model checker applies."""
    model = make_model(model_spec["name"], model_spec.get("initial"))
    return merge({"linearizable": run_checker(linearizable, history, model, budget_s)})
