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
election from ever finishing count as caught.

Where the target declares `steady_leaders` (targets/interface.py), a leader
that stops leading with nothing wrong fails it as well: no fault made or
in force from just before its election to its step-down, a majority of
the nodes (itself among them) answering polls; whether it resigned, or a
node stood for a later epoch and unseated it. Check-quorum resigns a
leader that a majority stopped fetching from, and a follower stands only
when its leader went unheard for an election timeout; with every node up
and every link whole neither happens. A leader that resigns anyway, or
that leaves its followers unanswered (a fetch it holds for new records,
say, that it never answers while no write comes), leaves the cluster
electing again and again, and acknowledging now and then between
elections, which `no-progress` passes. It is the real run's sight of what
the simulator judges as a liveness loss (no working leader at the end of
a schedule), and the run's lull (harness/run.py: its last seconds healed,
with no load) is where a cluster that needs its clients' writes to keep a
leader shows it.

Where the target declares the time it elects within (`elects_within_ms`,
for the run's settings: targets/interface.py), a cluster that stood stuck
longer fails it as well (`stuck`): a majority of the nodes up and heard by
one another, no fault touching them, and none of them leading
(availability's stuck spans). A leader killed or paused while the rest are
whole is replaced within a fetch timeout and an election or two; a cluster
that waits instead for the lost node to come back (a pre-vote that needs
every voter's grant, say) has lost the liveness a majority exists to keep,
and `no-progress` excuses it, a fault being in force.

Where the target declares `recovers`, a cluster that, once every fault
was healed and with every node running and answering, did not agree on a
leader or bring its copies together in the time the target gives it
fails it too (the harness's `unsettled` event): a replica that can never
catch up, or elections that never end, is lost liveness whatever the
history before it holds. Undeclared, the run is `unknown` (its final
copies unread)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from history.schema import NEMESIS_PROCESS, holds

from .availability import (
    ALIVE_WINDOW_NS,
    RECOVERY_NS,
    Ended,
    fault_spans,
    fault_windows,
    leaderships_ended,
    logged_transitions,
    stuck_in,
)
from .cases import Anomaly, case
from .checker import Result, Rule, Tables
from .result import result

NAME = "progress"
# Fewer quiet calls than this say nothing: a run may have only a moment without faults.
MIN_QUIET_CALLS = 10
QUIET = "quiet"
# The harness's events (harness/run.py) for a cluster that agreed on no leader as the run started,
# and for one that did not settle once healed, every node answering.
NO_LEADER, UNSETTLED = "no-leader", "unsettled"
# The harness's event as a run's lull ends (harness/run.py): the run lasted to then, its last rows before it.
LULL, LULL_SAID = "lull", "the run's lull ended: every fault healed and no client called since its start"


def progress(
    clients: Mapping[str, Mapping[str, Any]],
    events: pd.DataFrame,
    history: pd.DataFrame | None = None,
    *,
    steady_leaders: bool = False,
    recovers: bool = False,
    elects_within_ms: int | None = None,
) -> Result:
    """From the client figures by window (`ClientTally.figures`) and the
    node events: false where at least MIN_QUIET_CALLS operations were called
    with no fault in force and none was acknowledged, or where the cluster
    agreed on no leader as the run started; given the `history` (its
    nemesis rows and its span), with `steady_leaders`, where a leader
    stepped down on its own, and with `elects_within_ms`, where the cluster
    stood stuck longer than that; and with `recovers`, where the healed
    cluster did not settle."""
    quiet = clients.get(QUIET) or {"operations": 0, "acknowledged": 0}
    calls, acknowledged = int(quiet["operations"]), int(quiet["acknowledged"])
    found = no_leader(_harness_events(events, NO_LEADER)) + no_progress(calls, acknowledged)
    if recovers:
        found += no_recovery(_harness_events(events, UNSETTLED))
    stats = {"quiet_calls": calls, "quiet_acknowledged": acknowledged}
    if history is None or not (steady_leaders or elects_within_ms):
        return result(found, stats)
    transitions, being_made = logged_transitions(events), fault_windows(history, from_invoke=True)
    ends = run_ended(int(history["time_ns"].max()), events) if len(history) else None
    if steady_leaders:
        disturbed = _disturbed(history, being_made)
        ended = list(leaderships_ended(transitions))
        calm = unprovoked_step_downs(ended, _followed(transitions), disturbed, _heard(events), ends)
        found += calm
        stats["unprovoked_step_downs"] = len(calm)
    if elects_within_ms:
        found += stuck(stuck_in(history, transitions, being_made, ends) or [], elects_within_ms)
    return result(found, stats)


def _harness_events(events: pd.DataFrame, name: str) -> list[tuple[int, str]]:
    """The harness's own events of a name, each (when, why)."""
    rows = events[holds(events["event"], [name]) & holds(events["source"], ["harness"])]
    return [(int(t), str(why)) for t, why in rows[["time_ns", "reason"]].itertuples(index=False)]


@case(NAME, "no-leader")
def no_leader(starts: list[tuple[int, str]]) -> list[Anomaly]:
    """The cluster agreed on no leader in the time a run waits for one as
    it starts, with every node running: no operation could be made."""
    return [{"time_ns": t, "summary": f"the cluster agreed on no leader as it started: {why}"} for t, why in starts]


@case(NAME, "no-recovery")
def no_recovery(unsettled: list[tuple[int, str]]) -> list[Anomaly]:
    """Once every fault was healed, with every node running and answering,
    the cluster did not agree on a leader, or its copies did not meet, in
    the time the target gives it to settle."""
    return [
        {"time_ns": t, "summary": f"the healed cluster did not recover, every node answering: {why}"}
        for t, why in unsettled
    ]


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


@case(NAME, "stuck")
def stuck(spans: list[dict[str, Any]], elects_within_ms: int) -> list[Anomaly]:
    """A majority of the nodes stood up and heard by one another, no fault
    touching them, with none of them leading, for longer than the target
    says it takes to elect a leader (`spans`: availability's stuck spans)."""
    return [
        {
            "time_ns": span["time_ns"],
            "ms": span["ms"],
            "summary": f"{', '.join(span['nodes'])} (a majority) were up and heard by one another with no leader "
            f"for {span['ms']:.0f} ms, where the target elects one within {elects_within_ms} ms",
        }
        for span in spans
        if span["ms"] > elects_within_ms
    ]


def _disturbed(history: pd.DataFrame, being_made: pd.DataFrame) -> list[tuple[int, int]]:
    """When the nemesis acted: every fault from its invocation to its end
    (`being_made`: `fault_windows(..., from_invoke=True)`), and every row of
    its own (a voter change, a heal)."""
    spans = [(int(start), int(end)) for _, start, end, _ in fault_spans(history, being_made)]
    own = history.loc[history["process"] == NEMESIS_PROCESS, "time_ns"].tolist()
    return spans + [(int(t), int(t)) for t in own]


def run_ended(last_row_ns: int, events: pd.DataFrame) -> int:
    """When the run ended: its last row (`last_row_ns`), or the end of its
    lull after it (the harness's `lull` event; the lull has no row)."""
    return max([last_row_ns, *(t for t, _ in _harness_events(events, LULL))])


def _followed(transitions: pd.DataFrame) -> set[tuple[str, int, str]]:
    """Each (node, epoch, leader) where a node's logged transition named
    another as its leader in an epoch: it had heard that one lead."""
    named = transitions.dropna(subset=["leader", "epoch"])
    return set(zip(named["node"], named["epoch"].astype(int), named["leader"], strict=True))


def _heard(events: pd.DataFrame) -> pd.DataFrame:
    """When each node was heard from: its status polls and its own log's events."""
    return events.loc[holds(events["source"], ["poll", "log"]), ["time_ns", "node"]]


@case(NAME, "unprovoked-step-down")
def unprovoked_step_downs(
    ended: list[Ended],
    followed: set[tuple[str, int, str]],
    disturbed: list[tuple[int, int]],
    heard: pd.DataFrame,
    last: int | None,
) -> list[Anomaly]:
    """A leader stopped leading with nothing wrong: no fault was made or in
    force from just before its election to then, and a majority of the
    nodes (itself among them) were heard from. It resigned, or a node that
    had followed it in its epoch stood for a later one and unseated it (its
    followers went unanswered); one unseated by a node that never heard it
    lead (two that stood at once as the cluster came up, without Pre-Vote)
    is an election race, not this.

    `ended`: the leaderships that ended (availability's `leaderships_ended`), from the cluster's
    start (a cluster that elects again and again as it comes up is judged
    too: no fault is made before the run's first row) to its end (`last`,
    `run_ended`; None: the run has no row); `followed`: who followed whom
    in which epoch (`_followed`); `disturbed`: when the nemesis acted;
    `heard`: when each node answered a poll or logged an event."""
    if last is None:
        return []
    nodes = set(heard["node"].dropna())
    found = []
    for end in ended:
        time_ns, node, since = end.time_ns, end.node, end.since_ns
        if time_ns > last or any(start <= time_ns and until + RECOVERY_NS >= since for start, until in disturbed):
            continue
        unseated = end.later > end.epoch
        if unseated and (end.candidate, end.epoch, node) not in followed:
            continue
        alive = set(heard.loc[heard["time_ns"].between(time_ns - ALIVE_WINDOW_NS, time_ns), "node"])
        if node not in alive or len(alive) * 2 <= len(nodes):
            continue
        how = (
            f"was unseated by {end.candidate or 'a node'} standing for epoch {end.later}"
            if unseated
            else "stepped down"
        )
        summary = (
            f"{node}, leader of epoch {end.epoch}, {how} after {round((time_ns - since) / 1e6, 1)} ms "
            "with no fault made since before its election"
        )
        found.append({"time_ns": time_ns, "node": node, "epoch": end.epoch, "summary": summary})
    return found


def _clients_called_or_cluster_judged(t: Tables) -> bool:
    return bool(t.client_fs) or any(_harness_events(t.events, name) for name in (NO_LEADER, UNSETTLED))


def _judged(t: Tables) -> Result:
    declared = t.capabilities or {}
    return progress(
        t.client_figures,
        t.events,
        t.history,
        steady_leaders=bool(declared.get("steady_leaders")),
        recovers=bool(declared.get("recovers")),
        elects_within_ms=declared.get("elects_within_ms"),
    )


CHECKER = Rule(NAME, _clients_called_or_cluster_judged, _judged)
