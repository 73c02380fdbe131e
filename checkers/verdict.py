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
from .availability import availability
from .checker import Checker, Result, Rule, Tables
from .coverage import coverage
from .crashes import node_crashes, stops
from .data_loss import FINAL_COPY_KINDS as LOGS_FINAL_COPY_KINDS
from .data_loss import committed_data_loss, committed_data_loss_so_far
from .elections import election_safety, single_leader_per_epoch
from .linearizable import linearizable
from .membership import CHANGES, membership
from .membership import FINAL_COPY_KINDS as VOTERS_FINAL_COPY_KINDS
from .models import make_model
from .mutex import LOCK_FS, mutual_exclusion
from .progress import progress
from .result import merge, run_checker
from .signatures import signatures

DEFAULT_BUDGET_S = 30.0
NO_FAULT = "no fault was made"


def _appends(t: Tables) -> bool:
    return "append" in t.client_fs


def _locks(t: Tables) -> bool:
    return bool(t.client_fs & LOCK_FS)


def _registers(t: Tables) -> bool:
    """Client operations a model checks: any but appends' and locks' own checkers take."""
    return bool(t.client_fs) and not _locks(t)


def _membership_changed(t: Tables) -> bool:
    return bool((t.events["event"] == "voters").any() or t.history["f"].isin(CHANGES).any())


def _stopped(t: Tables) -> bool:
    return not stops(t.events).empty


def _clients_called(t: Tables) -> bool:
    return bool(t.client_fs)


def _always(t: Tables) -> bool:
    return True


# Every checker a verdict may hold (docs/organisation.md, "Verdicts"), in the verdict's order.
CHECKERS: tuple[Checker, ...] = (
    Rule("election-safety", _always, lambda t: election_safety(t.events, t.capabilities)),
    Rule("single-leader-per-epoch", _always, lambda t: single_leader_per_epoch(t.events, t.history, t.capabilities)),
    Rule("committed-data-loss", _appends, lambda t: committed_data_loss(t.history, t.final, t.events)),
    Rule("linearizable", _registers, lambda t: linearizable(t.history, None, t.budget_s)),
    Rule("mutual-exclusion", _locks, lambda t: mutual_exclusion(t.history, t.final)),
    Rule("membership", _membership_changed, lambda t: membership(t.history, t.events, t.final)),
    Rule("node-crashes", _stopped, lambda t: node_crashes(t.history, t.events)),
    Rule("progress", _clients_called, lambda t: progress(t.client_figures)),
    Rule("availability", _always, lambda t: availability(t.history, t.events, t.client_figures)),
)
NAMES = tuple(checker.name for checker in CHECKERS)
# What each checker can judge of a run's first part, so that a violation
# found there stays one in the whole run (`check_prefix`): None, the checker
# itself. They read only the history and the events, and what comes later
# cannot undo what they found. Two leaders in an epoch, a vote granted
# twice, a voter change taken while another was uncommitted, a log cut below
# its high watermark stay so; an operation still waiting for its answer is
# indeterminate to `linearizable` (it may take effect at any point after its
# call, or never), so an order none of its outcomes allows is not one a later
# answer allows. `membership`'s final-log case finds nothing before the
# final logs are read; `committed-data-loss` judges its cases of the nodes'
# logs alone. The others judge the whole run (availability; node-crashes,
# whose excuse for a stop may be confirmed after it).
SO_FAR: dict[str, Callable[[Tables], Result] | None] = {
    "election-safety": None,
    "single-leader-per-epoch": None,
    "committed-data-loss": lambda t: committed_data_loss_so_far(t.events),
    "linearizable": None,
    "membership": None,
}
# The cases of SO_FAR's checkers that only the nodes' final copies show,
# read once the run is healed: the live verdict has not judged them.
AFTER_HEALING: dict[str, frozenset[str]] = {
    "committed-data-loss": LOGS_FINAL_COPY_KINDS,
    "membership": VOTERS_FINAL_COPY_KINDS,
}


def as_judged_so_far(name: str, result: Mapping[str, Any]) -> bool | str:
    """A whole run's answer of checker `name` over the cases `check_prefix`
    judges too: its own, but true where every anomaly it names is one only
    the final copies show (AFTER_HEALING). What a live verdict is compared with."""
    later = AFTER_HEALING.get(name, frozenset())
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
    (`SO_FAR`; no final copies yet): a false one is a violation the whole
    run's verdict will hold too. One after another, as `run --check-live`
    runs them beside the load, on a thread of their own."""
    tables = Tables(history, events, frame([], FINAL_COLUMNS), capabilities, budget_s)
    return {
        checker.name: run_checker(partial(SO_FAR[checker.name] or checker.check, tables), checker.name)
        for checker in CHECKERS
        if checker.name in SO_FAR and checker.applies(tables)
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
