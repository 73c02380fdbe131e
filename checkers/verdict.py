"""Runs every checker that applies over a run's tables and merges the verdict
(pure: `results/checking.py` reads the run directory)."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any

import pandas as pd

from history.schema import FINAL_COLUMNS, frame

from .abstract_state import state_coverage
from .checker import Result, Tables
from .coverage import coverage
from .linearizable import linearizable
from .models import make_model
from .registry import CHECKERS, final_copy_kinds
from .result import merge, run_checker
from .signatures import signatures

DEFAULT_BUDGET_S = 30.0
NO_FAULT = "no fault was made"


def as_judged_so_far(name: str, result: Mapping[str, Any]) -> bool | str:
    """A whole run's answer of checker `name` over the cases `check_prefix`
    judges too: its own, but true where every anomaly it names is one only
    the final copies show (checkers/registry.py). What a live verdict is compared with."""
    later = final_copy_kinds(name)
    if result["valid"] is False and all(anomaly["kind"] in later for anomaly in result["anomalies"]):
        return True
    valid: bool | str = result["valid"]
    return valid


def check_tables(
    history: pd.DataFrame,
    events: pd.DataFrame,
    final: pd.DataFrame,
    budget_s: float = DEFAULT_BUDGET_S,
    capabilities: Mapping[str, Any] | None = None,
    given: Mapping[str, Callable[[], Result]] | None = None,
) -> Result:
    """Every checker that applies. `capabilities` are what the run's target
    declared (run.json); checkers read them instead of assuming a target.
    They run side by side on threads: each only reads the tables, and their
    work is mostly numpy and Arrow, which let go of the interpreter lock.
    `given`: checks that stand in for some checkers' own where the tables
    hold only some of the run's rows (checkers/pieces.py)."""
    return check(Tables(history, events, final, capabilities, budget_s), given or {})


def check(tables: Tables, given: Mapping[str, Callable[[], Result]]) -> Result:
    """`check_tables` of tables made."""
    history, events = tables.history, tables.events
    applying = [checker for checker in CHECKERS if checker.applies(tables)]
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        running = {
            c.name: pool.submit(run_checker, given.get(c.name) or partial(c.check, tables), c.name) for c in applying
        }
        covered = pool.submit(_coverage, history, events)
        verdict = merge({name: future.result() for name, future in running.items()})
        # Not a checker: what the faults tried (checkers/coverage.py), for the report and the campaign.
        verdict["coverage"] = covered.result()
    verdict["signatures"] = _signatures(history, events, verdict["checkers"])
    verdict["faults_made"] = verdict["coverage"].get("faults")  # None: coverage could not tell
    if verdict["faults_made"] == 0:  # `valid` then says nothing of how the target takes faults
        verdict["note"] = NO_FAULT
    return verdict


def check_prefix(
    history: pd.DataFrame,
    events: pd.DataFrame,
    budget_s: float,
    capabilities: Mapping[str, Any] | None = None,
) -> dict[str, Result]:
    """What the checkers that apply can judge of a run's tables so far
    (each checker's `so_far`; no final copies yet): a false one is a violation the whole
    run's verdict will hold too. One after another, as `run --check-live`
    runs them beside the load, on a thread of their own."""
    tables = Tables(history, events, frame([], FINAL_COLUMNS), capabilities, budget_s)
    return {
        checker.name: run_checker(partial(checker.so_far, tables), checker.name)
        for checker in CHECKERS
        if checker.so_far is not None and checker.applies(tables)
    }


def _signatures(history: pd.DataFrame, events: pd.DataFrame, checkers: Mapping[str, Result]) -> list[dict[str, Any]]:
    """What the run failed of, to group it with runs that failed alike (checkers/signatures.py)."""
    try:
        return signatures(history, events, checkers)
    except Exception as error:  # as with coverage: a bug here must not lose the verdicts
        return [
            {"checker": "signatures", "kind": "error", "fault": f"{type(error).__name__}: {error}", "time_ns": None}
        ]


def _coverage(history: pd.DataFrame, events: pd.DataFrame) -> dict[str, Any]:
    try:
        return {**coverage(history, events), **state_coverage(history, events)}
    except Exception as error:  # as with a checker: a bug here must not lose the verdicts
        return {"cells": [], "hit": 0, "error": f"{type(error).__name__}: {error}"}


def check_imported(history: pd.DataFrame, model_spec: Mapping[str, Any], budget_s: float = DEFAULT_BUDGET_S) -> Result:
    """A history from another tool has no node events: only the model checker applies."""
    model = make_model(model_spec["name"], model_spec.get("initial"))
    return merge({"linearizable": run_checker(partial(linearizable, history, model, budget_s), "linearizable")})
