"""`progress`: while no fault was in force, the cluster acknowledged
something. A quorum that elects a leader and then takes no write, even with
every node up and every link whole, is broken however safe its history is:
`availability` only reports such a run (it is never false), and a release
gated on safety alone would pass it. Jepsen's stats checker fails a run in
which an operation kind never succeeded at all; this rule is narrower, so a
run whose faults kept a majority away throughout is not failed for it:
only the operations called in quiet windows (no fault in force: the
windows of checkers/availability.py) count, and at least MIN_QUIET_CALLS
of them, every one unacknowledged, fail it.

A cluster that never agreed on a leader as the run started took no load at
all: the run records that (a `no-leader` event of the harness, saying what
each node named) and this checker fails it too. The same cluster a moment
into its load would have failed `no-progress`; judging it, not reporting
an error, is what lets a mutant or a replayed schedule that keeps the first
election from ever finishing count as caught."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from history.schema import holds

from .cases import Anomaly, case
from .checker import Result, Rule, Tables
from .result import result

NAME = "progress"
# Fewer quiet calls than this say nothing: a run may have only a moment without faults.
MIN_QUIET_CALLS = 10
QUIET = "quiet"
# The harness's event for a cluster that agreed on no leader as the run started (harness/run.py).
NO_LEADER = "no-leader"


def progress(clients: Mapping[str, Mapping[str, Any]], events: pd.DataFrame) -> Result:
    """From the client figures by window (`ClientTally.figures`) and the
    node events: false where at least MIN_QUIET_CALLS operations were called
    with no fault in force and none was acknowledged, or where the cluster
    agreed on no leader as the run started."""
    quiet = clients.get(QUIET) or {"operations": 0, "acknowledged": 0}
    calls, acknowledged = int(quiet["operations"]), int(quiet["acknowledged"])
    found = no_leader(_no_leader_events(events)) + no_progress(calls, acknowledged)
    return result(found, {"quiet_calls": calls, "quiet_acknowledged": acknowledged})


def _no_leader_events(events: pd.DataFrame) -> list[tuple[int, str]]:
    rows = events[holds(events["event"], [NO_LEADER]) & holds(events["source"], ["harness"])]
    return [(int(t), str(why)) for t, why in rows[["time_ns", "reason"]].itertuples(index=False)]


@case(NAME, "no-leader")
def no_leader(starts: list[tuple[int, str]]) -> list[Anomaly]:
    """The cluster agreed on no leader in the time a run waits for one as
    it starts, with every node running: no operation could be made."""
    return [{"time_ns": t, "summary": f"the cluster agreed on no leader as it started: {why}"} for t, why in starts]


@case(NAME, "no-progress")
def no_progress(calls: int, acknowledged: int) -> list[Anomaly]:
    """The cluster acknowledged none of at least MIN_QUIET_CALLS operations
    called while no fault was in force."""
    if calls < MIN_QUIET_CALLS or acknowledged:
        return []
    return [
        {
            "calls": calls,
            "summary": f"none of the {calls} operations called while no fault was in force was acknowledged",
        }
    ]


def _clients_called_or_no_leader(t: Tables) -> bool:
    return bool(t.client_fs) or bool(_no_leader_events(t.events))


def _judged(t: Tables) -> Result:
    return progress(t.client_figures, t.events)


CHECKER = Rule(NAME, _clients_called_or_no_leader, _judged)
