"""`progress`: while no fault was in force, the cluster acknowledged
something. A quorum that elects a leader and then takes no write, even with
every node up and every link whole, is broken however safe its history is:
`availability` only reports such a run (it is never false), and a release
gated on safety alone would pass it. Jepsen's stats checker fails a run in
which an operation kind never succeeded at all; this rule is narrower, so a
run whose faults kept a majority away throughout is not failed for it:
only the operations called in quiet windows (no fault in force: the
windows of checkers/availability.py) count, and at least MIN_QUIET_CALLS
of them, every one unacknowledged, fail it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .cases import Anomaly, case
from .checker import Result, Rule, Tables
from .result import result

NAME = "progress"
# Fewer quiet calls than this say nothing: a run may have only a moment without faults.
MIN_QUIET_CALLS = 10
QUIET = "quiet"


def progress(clients: Mapping[str, Mapping[str, Any]]) -> Result:
    """From the client figures by window (`ClientTally.figures`): false where
    at least MIN_QUIET_CALLS operations were called with no fault in force
    and none was acknowledged."""
    quiet = clients.get(QUIET) or {"operations": 0, "acknowledged": 0}
    calls, acknowledged = int(quiet["operations"]), int(quiet["acknowledged"])
    return result(no_progress(calls, acknowledged), {"quiet_calls": calls, "quiet_acknowledged": acknowledged})


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


def _clients_called(t: Tables) -> bool:
    return bool(t.client_fs)


def _judged(t: Tables) -> Result:
    return progress(t.client_figures)


CHECKER = Rule(NAME, _clients_called, _judged)
