"""What a run's faults tried: each fault confirmed in the history becomes a
cell of (fault kind, the role of what it hit, what else was going on; the
words are history/coverage.py's), with the roles from the nodes' own states
at the fault's moment (the events table: status polls and log
transitions), so a user sees which cells a campaign never reached, and a
guided nemesis can aim for them.

Pure: a function of the history and events tables.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

import pandas as pd

from history.coverage import cell
from history.faults import COUNTED
from history.schema import columns, named_nodes, nemesis_done

from .availability import fault_windows
from .latest import Latest


def node_states(events: pd.DataFrame) -> Latest:
    """Each node's last known state (status polls and transitions) at any moment."""
    known = events.loc[events["state"].notna() & events["node"].notna(), ["time_ns", "node", "state"]]
    return Latest(known, known["state"].tolist())


def coverage(history: pd.DataFrame, events: pd.DataFrame) -> dict[str, Any]:
    """The cells this run's faults hit, with how often, sorted; `hit` counts
    them and `faults` the faults made (a fault that touched no node or link is none)."""
    nemesis = nemesis_done(history)
    nemesis = nemesis[nemesis["f"].isin(COUNTED)]
    windows = fault_windows(history)
    found = []
    spans = list(columns(windows, "f", "start_ns", "end_ns"))
    states = node_states(events)
    for f, t, node in columns(nemesis, "f", "time_ns", "node"):
        touched = named_nodes(node)
        if not touched:  # confirmed, but it touched nothing (a partition that cut no link): no fault was made
            continue
        others = [other for other, start, end in spans if start < t < end and other != f]
        found.append({**cell(str(f), touched, states.at(t - 1), others), "count": 1})
    cells = add_up([found])
    return {"cells": cells, "hit": len(cells), "faults": len(found)}


def add_up(cell_lists: Iterable[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Cells of many runs (or faults) as one list, counts added, sorted."""
    counts: Counter[Any] = Counter()
    for cells in cell_lists:
        for c in cells:
            counts[(c["fault"], c["role"], c["with"])] += c["count"]
    return [{"fault": f, "role": r, "with": w, "count": n} for (f, r, w), n in sorted(counts.items())]


def unseen_chance(runs: Iterable[list[dict[str, Any]]]) -> float | None:
    """Good–Turing's estimate of the chance that the next run hits a cell no
    run has hit yet. The runs are the draws, and a run's cells (each once,
    however often it hit them) what it drew; the cells hit by exactly one
    run stand for those not hit yet: Q1 / T, the expected number of new
    cells the next run hits (Chao's incidence form), which bounds the
    chance that it hits one; at most 1. None before any run."""
    seen: Counter[Any] = Counter()
    count = 0
    for cells in runs:
        count += 1
        seen.update({(c["fault"], c["role"], c["with"]) for c in cells})
    if not count:
        return None
    once = sum(1 for runs_hit in seen.values() if runs_hit == 1)
    return min(1.0, once / count)
