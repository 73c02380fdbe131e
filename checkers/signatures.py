"""What a failing run failed of, in a form that groups runs (triage across
an archive, `splitbrain analyze` and `serve`): per checker that found a
violation, its earliest anomaly's kind and the fault in force when it
happened (or, where none was, the next one made: what lost an append
acknowledged just before it), as coverage names it (checkers/coverage.py: the fault's kind and
the role of what it hit). Runs of one bug fail alike, so they share a
signature; two bugs that one checker catches the same way (a lost
acknowledged append) are told apart by the fault that was in force.

The cell leaves out coverage's third part (the other faults in force): a
guided nemesis varies that from run to run, so it would split one bug's runs
into as many groups as there were combinations around it.

Pure: a function of the run's tables and its checkers' results.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from history.coverage import cell
from history.faults import COUNTED, INSTANT
from history.schema import columns, named_nodes, nemesis_done

from .availability import fault_windows
from .coverage import node_states

NO_FAULT = "no fault"
# A fault over as soon as it is made (a power loss, a flicker) is put down as the one in force this long after.
INSTANT_NS = 5_000_000_000


def anomaly_time_ns(anomaly: Mapping[str, Any], row_times: Mapping[int, int]) -> int | None:
    """When an anomaly happened: its own time, the time of the history row it
    names (`index`), or the last of the times it names (when its evidence was
    complete); None where it names none."""
    if isinstance(anomaly.get("time_ns"), int):
        return int(anomaly["time_ns"])
    if isinstance(anomaly.get("index"), int) and anomaly["index"] in row_times:
        return row_times[anomaly["index"]]
    times = [t for t in anomaly.get("times_ns") or () if isinstance(t, int)]
    return max(times) if times else None


def faults_made(history: pd.DataFrame, events: pd.DataFrame) -> list[tuple[int, int, str]]:
    """The run's faults in order: (made at, in force until, `fault:role`);
    an instant one is put down as in force for INSTANT_NS after it."""
    nemesis = nemesis_done(history)
    nemesis = nemesis[nemesis["f"].isin(COUNTED)]
    open_until = {
        (f, int(start)): int(end) for f, start, end in columns(fault_windows(history), "f", "start_ns", "end_ns")
    }
    states = node_states(events)
    made = []
    for f, t, node in columns(nemesis, "f", "time_ns", "node"):
        touched = named_nodes(node)
        if not touched:
            continue
        hit = cell(str(f), touched, states.at(int(t) - 1), [])
        until = int(t) + INSTANT_NS if f in INSTANT else open_until.get((f, int(t)), int(t))
        made.append((int(t), until, f"{hit['fault']}:{hit['role']}"))
    return made


def fault_at(history: pd.DataFrame, events: pd.DataFrame, at_ns: int) -> str:
    """`fault:role` of the fault an anomaly at `at_ns` is put down to (`put_down_to`)."""
    return put_down_to(faults_made(history, events), at_ns)


def put_down_to(made: list[tuple[int, int, str]], at_ns: int) -> str:
    """Of the faults made (`faults_made`): the latest begun by `at_ns` and
    still in force then; where none was, the first made after it (an append
    acknowledged before a cut is lost by the cut), else the last made before
    it; NO_FAULT in a run without faults."""
    in_force, after, before = None, None, None
    for t, until, named in made:
        if t > at_ns:
            after = after or named
        elif until >= at_ns:
            in_force = named
        else:
            before = named
    return in_force or after or before or NO_FAULT


def signatures(history: pd.DataFrame, events: pd.DataFrame, checkers: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One per checker whose answer is false: its earliest anomaly's kind,
    the fault it is put down to (`fault_at`), and when (None where the anomaly names no
    time); the earliest first, as the first thing that went wrong is the
    one that groups the run (`group`)."""
    failed = {name: r for name, r in checkers.items() if r.get("valid") is False and r.get("anomalies")}
    named = {a["index"] for r in failed.values() for a in r["anomalies"] if isinstance(a.get("index"), int)}
    rows = history.loc[history["index"].isin(named), ["index", "time_ns"]]
    row_times = dict(zip(rows["index"].tolist(), rows["time_ns"].tolist(), strict=True))
    made = faults_made(history, events) if failed else []
    found = []
    for name, result in failed.items():
        timed = [(anomaly_time_ns(a, row_times), a) for a in result["anomalies"]]
        when, first = min(timed, key=lambda pair: (pair[0] is None, pair[0] or 0))
        fault = put_down_to(made, when) if when is not None else NO_FAULT
        found.append({"checker": name, "kind": first.get("kind", "anomaly"), "fault": fault, "time_ns": when})
    return sorted(found, key=lambda signed: (signed["time_ns"] is None, signed["time_ns"] or 0))


def key(signature: Mapping[str, Any]) -> str:
    """A signature as one string: checker/kind/fault."""
    return f"{signature['checker']}/{signature['kind']}/{signature['fault']}"


def group(verdict: Mapping[str, Any]) -> str | None:
    """The group a failing run's verdict puts it in: its earliest signature's
    key (a bug that several checkers catch, as a lost append that also
    breaks linearizability, is first seen the same way in each of its
    runs); None for a run that did not fail."""
    signed = verdict.get("signatures") or []
    return key(signed[0]) if verdict.get("valid") is False and signed else None
