"""`node-crashes`: a node that stopped on its own. A node halted on an error
of its own (a `halted` event: the reference quorum's core broke one of its
own rules, or a write failed; a target's log saying it panicked), or its
process exited without the nemesis stopping it (an `exited` event, which
the harness records when it sees one). Jepsen counts a crashed server as a
finding; so does this, since a node that dies on a fault it should ride out
is a bug whatever its data look like afterwards.

A correct node does stop on a full disk or on damaged files (fail-stop,
`history/faults.py`'s `may_stop`): a stop of a node such a fault touched,
while it was in force or within GRACE_NS after, is not counted.
"""

from __future__ import annotations

import pandas as pd

from history.faults import INSTANT, MAY_STOP
from history.schema import columns, named_nodes, nemesis_done

from .availability import fault_windows
from .cases import Anomaly, case
from .checker import Result, Rule, Tables
from .result import result

NAME = "node-crashes"
STOPS = ("halted", "exited")
# How long after a fault that may stop a node its stop is still put down to it (a start on damaged files, a retry).
GRACE_NS = 5_000_000_000
# A node's process seen exited this soon after the node said it halted is the same stop.
SAME_STOP_NS = 30_000_000_000


def stops(events: pd.DataFrame) -> pd.DataFrame:
    """The events that say a node stopped on its own."""
    return events[events["event"].isin(STOPS)]


def _excusing(history: pd.DataFrame) -> list[tuple[int, int, set[str]]]:
    """(start, end, nodes) of every fault a correct node may stop on."""
    windows = fault_windows(history, from_invoke=True)
    spans = [
        (int(start), int(end), _nodes(node))
        for f, start, end, node in columns(windows, "f", "start_ns", "end_ns", "node")
        if f in MAY_STOP
    ]
    done = nemesis_done(history)
    instant = done[done["f"].isin(MAY_STOP & INSTANT)]
    spans += [(int(t), int(t), _nodes(node)) for t, node in columns(instant, "time_ns", "node")]
    return spans


def _nodes(touched: object) -> set[str]:
    """The nodes a nemesis row names (a damaged file's description beside them is not one)."""
    return {n for n in named_nodes(touched) if isinstance(n, str)}


def node_crashes(history: pd.DataFrame, events: pd.DataFrame) -> Result:
    """The checker: every stop of a node on its own that no fault it may stop on excuses."""
    unexcused, excused = _unexcused(history, events)
    return result(nodes_stopped(unexcused), {"stops": len(unexcused) + excused, "excused": excused})


def _unexcused(history: pd.DataFrame, events: pd.DataFrame) -> tuple[list[tuple[int, str, str, str]], int]:
    """The stops no fault excuses (time, node, how, the reason given), and how many one did.
    A node's process seen exited soon after it said it halted is the one stop."""
    excusing = _excusing(history)
    found: list[tuple[int, str, str, str]] = []
    excused = 0
    halts: dict[str, list[int]] = {}
    for time_ns, node, event, reason in columns(
        stops(events).sort_values("time_ns"), "time_ns", "node", "event", "reason"
    ):
        t = int(time_ns)
        if event == "exited" and any(t - SAME_STOP_NS <= h <= t for h in halts.get(node, [])):
            continue
        if event == "halted":
            halts.setdefault(node, []).append(t)
        if any(node in nodes and start <= t <= end + GRACE_NS for start, end, nodes in excusing):
            excused += 1
            continue
        found.append((t, node, event, reason if isinstance(reason, str) else "no reason given"))
    return found, excused


@case(NAME, "node-stopped")
def nodes_stopped(unexcused: list[tuple[int, str, str, str]]) -> list[Anomaly]:
    """A node halted on an error of its own, or its process exited without
    the nemesis stopping it, while no fault it may stop on touched it."""
    return [
        {
            "node": node,
            "time_ns": t,
            "summary": f"{node} {'halted' if event == 'halted' else 'exited on its own'}: {said}",
            "reason": said,
        }
        for t, node, event, said in unexcused
    ]


def _stopped(t: Tables) -> bool:
    return not stops(t.events).empty


def _judged(t: Tables) -> Result:
    return node_crashes(t.history, t.events)


CHECKER = Rule(NAME, _stopped, _judged)
