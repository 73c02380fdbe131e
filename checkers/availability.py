"""`availability`: liveness figures, split by nemesis window. Not a safety
verdict: it is always `valid: true` and a release gate reads its stats.

Figures: leader elections, resignations and epochs, time without a leader, client success
rate and latency, the longest time the cluster stood stuck (`stuck_ms`:
below), and "disruptive elections" as KIP-996 means them: an
election that unseats a leader that was alive and heard by a majority at
that moment, as when a healed follower's higher epoch forces one that
Pre-Vote exists to prevent. A leader that the nemesis killed, paused,
bounced, restarted or powered off, or that a partition cut off from a
majority or muted, since it was elected, is none of those: the election that
replaces it is the one Pre-Vote must let through. So are the candidacies of
a member cut off on its own: they unseat nobody until it is back.

Stuck: a majority of the nodes up and heard (no fault in force touched
them, nor ended on them within RECOVERY_NS), and no node leading but one
a fault has taken out (a leader whose clock is moved still leads). A
correct cluster leaves that state within an election or two; one that
stays (a resigned leader that never stands again while its peer waits on
it, say) is a liveness bug no safety checker sees, and a gate bounds it
(`max_stuck_ms`). Where the voter set changed in the run (a fault that
reshapes the cluster, or a voter change), what a majority is was not
fixed, and `stuck_ms` is None. A node whose files a fault damaged is not
counted up again in the run (`touches`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from history.cuts import largest_connected, unheard
from history.faults import CATALOGUE, INSTANT, PARTITION, RECOVERIES, SLOWS
from history.schema import NEMESIS_PROCESS, columns, named_nodes, nemesis_done

from .checker import Result, Rule, Tables, always
from .pairing import Pairs, pair
from .result import result

NAME = "availability"
ALIVE_WINDOW_NS = 1_000_000_000
# The figures a verdict's stats hold (a release gate bounds them by name):
# the run's, and each window's under `clients.<window>`.
FIGURES = (
    "leader_elections",
    "resignations",
    "epochs",
    "leaderless_ms",
    "stuck_ms",
    "disruptive_elections",
    "fault_windows",
)
CLIENT_FIGURES = ("operations", "ok_rate", "latency_p50_ms", "latency_p99_ms")
# Faults that leave the nodes they touch up and heard (links are judged by
# the cut in force; a moved clock does not silence a node); any other fault
# that touched a leader since its election took it out of the leadership.
LEAVE_NODES_UP = {fault.name for fault in CATALOGUE if fault.leaves_nodes_up}
# Faults that may leave a node's files damaged (`Fault.damages`).
DAMAGING = {fault.name for fault in CATALOGUE if fault.damages}
# Faults after which what a majority is was not fixed through the run.
RESHAPING = {fault.name for fault in CATALOGUE if fault.reshapes or fault.bookkeeping}
# A node a fault touched counts as up and heard again this long after the
# fault ended: time to start, read its log and hear from a leader (a real
# node of the reference quorum restarts in about 0.6 s).
RECOVERY_NS = 1_000_000_000
STUCK_LISTED = 5


def fault_windows(history: pd.DataFrame, from_invoke: bool = False) -> pd.DataFrame:
    """One row per fault in force: f, start_ns, end_ns, node (what it touched,
    JSON). A window opens when the fault is confirmed; `from_invoke`: when it
    was asked for, as a fault takes hold while it is being made (iptables
    rules for 5 nodes take half a second) and a judgement that a fault
    excuses takes that time in."""
    nemesis = nemesis_done(history).sort_values("time_ns")
    starts = _invoked_at(history, nemesis) if from_invoke else nemesis["time_ns"].tolist()
    open_faults: list[dict[str, Any]] = []
    windows = []
    end_of_run = int(history["time_ns"].max()) if len(history) else 0
    for f, time_ns, node, start_ns in zip(
        nemesis["f"].tolist(), nemesis["time_ns"].tolist(), nemesis["node"].tolist(), starts
    ):
        undoes = RECOVERIES.get(f, ())
        if f in RECOVERIES:
            still = []
            for fault in open_faults:
                if undoes is None or fault["f"] in undoes:
                    windows.append({**fault, "end_ns": time_ns})
                else:
                    still.append(fault)
            open_faults = still
        elif f not in INSTANT:
            open_faults.append({"f": f, "start_ns": start_ns, "node": node})
    windows += [{**fault, "end_ns": end_of_run} for fault in open_faults]
    return pd.DataFrame(windows, columns=["f", "start_ns", "end_ns", "node"])


def _invoked_at(history: pd.DataFrame, done: pd.DataFrame) -> list[int]:
    """When each confirmed nemesis operation was asked for: the nemesis makes
    one at a time, so the last invocation before its confirmation."""
    nemesis = history[history["process"] == NEMESIS_PROCESS]
    invoked = np.sort(nemesis.loc[nemesis["type"] == "invoke", "time_ns"].to_numpy(dtype="int64"))
    confirmed = done["time_ns"].to_numpy(dtype="int64")
    if not len(invoked):
        listed: list[int] = confirmed.tolist()
        return listed
    before = invoked[np.maximum(np.searchsorted(invoked, confirmed, side="right") - 1, 0)]
    earliest: list[int] = np.where(before <= confirmed, before, confirmed).tolist()
    return earliest


def _window_codes(times: np.ndarray, windows: pd.DataFrame) -> tuple[np.ndarray, list[str]]:
    """Each time's window as a code into the names returned ("quiet" is 0);
    a later window wins where two overlap. Codes, not a column of names: a
    million operations grouped by an object column cost most of the checker."""
    names = ["quiet", *dict.fromkeys(windows["f"])]
    codes = np.zeros(len(times), dtype="int64")
    for f, start, end in columns(windows, "f", "start_ns", "end_ns"):
        codes[(times >= start) & (times < end)] = names.index(f)
    return codes, names


@dataclass
class ClientTally:
    """The client operations answered so far, by the fault window each was
    called in: how many, how many ok, and the ok ones' latencies (what a
    run checked in pieces adds up: `checkers/pieces.py`)."""

    operations: dict[str, int] = field(default_factory=dict)
    ok: dict[str, int] = field(default_factory=dict)
    latencies_ns: dict[str, list[np.ndarray]] = field(default_factory=dict)

    def add(self, history: pd.DataFrame, windows: pd.DataFrame, pairs: Pairs | None = None) -> None:
        """The operations `pairs` answered in `history` (by default, all it answers)."""
        pairs = pair(history) if pairs is None else pairs
        times = history["time_ns"].to_numpy(dtype="int64")
        ok = (history["type"] == "ok").to_numpy(dtype=bool, na_value=False)[pairs.done]
        latency_ns = times[pairs.done] - times[pairs.call]
        codes, names = _window_codes(times[pairs.call], windows)
        for code in np.unique(codes):
            mine, name = codes == code, names[code]
            self.operations[name] = self.operations.get(name, 0) + int(mine.sum())
            self.ok[name] = self.ok.get(name, 0) + int(ok[mine].sum())
            self.latencies_ns.setdefault(name, []).append(latency_ns[mine & ok])

    def figures(self) -> dict[str, Any]:
        """Per window: operations, the share ok, and the ok ones' median and
        99th percentile latency. Once: the latencies (8 bytes an operation)
        are let go as they are read."""
        figures = {}
        for name, operations in self.operations.items():
            answered_ok = np.concatenate(self.latencies_ns.pop(name)) / 1e6
            p50, p99 = np.quantile(answered_ok, [0.5, 0.99]) if len(answered_ok) else (None, None)
            figures[name] = {
                "operations": operations,
                "acknowledged": self.ok[name],
                "ok_rate": round(self.ok[name] / operations, 4),
                "latency_p50_ms": None if p50 is None else round(float(p50), 2),
                "latency_p99_ms": None if p99 is None else round(float(p99), 2),
            }
        return dict(sorted(figures.items()))


def client_figures(history: pd.DataFrame, windows: pd.DataFrame | None = None) -> dict[str, Any]:
    """The client operations' figures by fault window (`ClientTally.figures`)."""
    windows = fault_windows(history) if windows is None else windows
    tally = ClientTally()
    if (history["process"] >= 0).any():
        tally.add(history, windows)
    return tally.figures()


def _leaderless_ms(transitions: pd.DataFrame, span_ns: int) -> float:
    """Time in the run when no node's latest logged transition was to leader."""
    if transitions.empty:
        return span_ns / 1e6
    leading: set[str] = set()
    last, without = 0, 0
    for time_ns, node, state in columns(transitions, "time_ns", "node", "state"):
        if not leading:
            without += max(0, time_ns - last)
        last = time_ns
        if state == "leader":
            leading.add(node)
        else:
            leading.discard(node)
    if not leading:
        without += max(0, span_ns - last)
    return without / 1e6


def disruptive_elections(
    events: pd.DataFrame, transitions: pd.DataFrame, windows: pd.DataFrame, node_faults: pd.DataFrame
) -> list[dict[str, Any]]:
    """Leaders unseated while alive and heard by a majority: a leader of
    epoch E that stops leading once a later epoch has begun (it moves on to
    that epoch, or some node has stood for or won one), though no fault took
    it down and no partition cut it off from a majority (or muted it) since
    its election (a leader cut off or downed meanwhile is a stale one,
    replaced as it should be). It may learn of the later epoch from the
    candidate itself (a rejoining member's higher term), or only once
    another node has won it (KIP-996's flip-flop: a member it cannot reach
    wins the others' votes, and the leader resigns when its followers stop
    fetching). Each names the epoch that unseated it and the node that stood
    for that epoch (None where no candidacy was logged).
    `transitions`: the nodes' logged ones in time order; `windows`: the
    faults in force from their invocation (`fault_windows`); `node_faults`:
    the faults that took nodes down (`_node_faults`)."""
    polls = events.loc[events["event"] == "status", ["node", "time_ns"]]
    nodes = sorted(events["node"].dropna().unique())
    partitions = windows[windows["f"] == PARTITION]
    found = []
    for ended in leaderships_ended(transitions):
        if ended.later <= ended.epoch:
            continue
        time_ns, node, since_ns = ended.time_ns, ended.node, ended.since_ns
        alive = polls[(polls["node"] == node) & polls["time_ns"].between(time_ns - ALIVE_WINDOW_NS, time_ns)]
        if (
            len(alive)
            and not _touched(node_faults, node, since_ns, time_ns)
            and not _cut_off(partitions, node, nodes, since_ns, time_ns)
        ):
            found.append(
                {
                    "time_ns": time_ns,
                    "leader": node,
                    "leader_epoch": ended.epoch,
                    "epoch": ended.later,
                    "candidate": ended.candidate,
                }
            )
    return found


@dataclass(frozen=True)
class Ended:
    """A leadership that ended: when, whose, of which epoch, since when it
    led; the latest epoch begun by then (some node stood for or won it, or
    the node itself moved to it: its own where none later) and the node
    that first stood for that one (None where no candidacy was logged)."""

    time_ns: int
    node: str
    epoch: int
    since_ns: int
    later: int
    candidate: str | None


def leaderships_ended(transitions: pd.DataFrame) -> Iterator[Ended]:
    """Each leadership the logged transitions (`logged_transitions`) show
    ending, in time order: a leader's next transition to any other state."""
    state: dict[str, tuple[str, int, int]] = {}  # node -> (state, epoch, since when in that state)
    stood: dict[int, str] = {}  # epoch -> the first node that stood for it
    begun = -1  # the latest epoch some node has stood for or won
    for time_ns, node, now, epoch_now in columns(transitions, "time_ns", "node", "state", "epoch"):
        # A transition that names no epoch (a target may log none with a step-down) stays in the node's last known one.
        epoch_now = int(epoch_now) if pd.notna(epoch_now) else state.get(node, (None, -1, time_ns))[1]
        if now in ("candidate", "leader"):
            stood.setdefault(epoch_now, node)
            begun = max(begun, epoch_now)
        was, epoch, since_ns = state.get(node, (None, -1, time_ns))
        if was == "leader" and now != "leader":
            later = max(epoch_now, begun)
            yield Ended(int(time_ns), str(node), epoch, int(since_ns), later, stood.get(later))
        state[node] = (now, epoch_now, since_ns if was == now else time_ns)


def logged_transitions(events: pd.DataFrame) -> pd.DataFrame:
    """The state transitions the nodes' own logs hold, in time order."""
    logged = (events["event"] == "transition") & (events["source"] == "log")
    return events.loc[logged, ["time_ns", "node", "state", "epoch", "leader"]].sort_values("time_ns", kind="stable")


def _cut_off(partitions: pd.DataFrame, node: str, nodes: list[str], since_ns: int, until_ns: int) -> bool:
    """Whether the partitions in force at some moment between `since_ns` and
    `until_ns` left `node` unheard by a majority (cut off, or muted: nobody
    hears it). Partitions made one after another cut together: a leader
    whose link to one follower one cut and whose link from the other another
    cut is heard by neither, though each cut alone leaves it a majority. The
    links in force grow only as a partition begins, so those moments (or
    `since_ns`) are the ones to judge."""
    overlapping = partitions[(partitions["start_ns"] <= until_ns) & (partitions["end_ns"] >= since_ns)]
    spans = [
        (start, end, {tuple(link) for link in named_nodes(links)})
        for start, end, links in columns(overlapping, "start_ns", "end_ns", "node")
    ]
    for begun, _, _ in spans:
        at = max(begun, since_ns)
        if unheard(set().union(*(cut for start, end, cut in spans if start <= at <= end)), node, nodes):
            return True
    return False


def fault_spans(history: pd.DataFrame, windows: pd.DataFrame) -> list[tuple[str, int, int, object]]:
    """Every confirmed fault as (f, start_ns, end_ns, its `node` column):
    the lasting ones with their windows (`windows`: from `fault_windows(...,
    from_invoke=True)`), then the instant ones from when each was asked for
    to its confirmation."""
    done = nemesis_done(history)
    instant = done[done["f"].isin(INSTANT)]
    made: list[tuple[str, int, int, object]] = list(columns(windows, "f", "start_ns", "end_ns", "node"))
    made += zip(instant["f"], _invoked_at(history, instant), instant["time_ns"].tolist(), instant["node"].tolist())
    return made


def _node_faults(history: pd.DataFrame, windows: pd.DataFrame) -> pd.DataFrame:
    """The confirmed faults that took nodes down, each with its window:
    start_ns (when it was asked for: `windows` from `fault_windows(...,
    from_invoke=True)`), end_ns (its recovery confirmed, or its own
    confirmation for an instant one) and the nodes it touched (a set)."""
    return pd.DataFrame(
        [
            {"start_ns": start, "end_ns": end, "nodes": {n for n in named_nodes(node) if isinstance(n, str)}}
            for f, start, end, node in fault_spans(history, windows)
            if f not in LEAVE_NODES_UP
        ],
        columns=["start_ns", "end_ns", "nodes"],
    )


@dataclass(frozen=True)
class Touch:
    """One fault, from its invocation to its end: the nodes it touched (the
    nodes it names, or every node where it names none) and the links it
    cut; `out`: it took its nodes out (down; a cut takes out those that
    every cut in force together leaves unheard by a majority, `stuck_spans`
    judges them), where a moved clock or a slowed link leaves them up and
    heard."""

    start_ns: int
    end_ns: int
    nodes: frozenset[str]
    cut: frozenset[tuple[str, str]] = frozenset()
    out: bool = True


def touches(history: pd.DataFrame, windows: pd.DataFrame, nodes: list[str]) -> list[Touch]:
    """Every fault the nemesis made, as a `Touch` (`windows`: from
    `fault_windows(..., from_invoke=True)`). A node whose files a fault
    damaged is touched, not out, from then to the run's end: it may lack
    records it acknowledged, and a correct one withholds its vote until a
    leader has caught it up (KIP-903's lesson), so a majority that needs
    it is never judged stuck."""
    found = []
    end_of_run = int(history["time_ns"].max()) if len(history) else 0
    for f, start, end, named in fault_spans(history, windows):
        items = named_nodes(named)
        names = {item for item in items if isinstance(item, str)} & set(nodes)
        links = frozenset(tuple(item) for item in items if isinstance(item, list) and len(item) == 2)
        if links and f not in SLOWS:  # who it leaves unheard is judged with the cuts in force beside it
            found.append(Touch(int(start), int(end), frozenset(names), links))
        elif links:
            found.append(
                Touch(int(start), int(end), frozenset({n for link in links for n in link} & set(nodes)), out=False)
            )
        else:
            out = f not in LEAVE_NODES_UP
            found.append(Touch(int(start), int(end), frozenset(names or nodes), out=out))
        if f in DAMAGING and names:
            found.append(Touch(int(end), end_of_run, frozenset(names), out=False))
    return found


def stuck_spans(
    transitions: pd.DataFrame, touched: list[Touch], nodes: list[str], start_ns: int, end_ns: int
) -> list[dict[str, Any]]:
    """The spans, longest first, in which a majority of `nodes` were up and
    heard by one another (no fault in force touched them, nor ended on them
    within RECOVERY_NS; no link among them cut then either) and no node that
    a fault had not taken out was leading (its last logged transition; a
    leader whose clock a fault moves still leads; one that the links cut
    then, by every partition together, left unheard by a majority is taken
    out); each with the nodes up and heard as it began."""
    moments = {start_ns, end_ns, *(t for t in transitions["time_ns"].tolist() if start_ns < t < end_ns)}
    moments |= {t for touch in touched for t in (touch.start_ns, touch.end_ns, touch.end_ns + RECOVERY_NS)}
    changes = list(columns(transitions, "time_ns", "node", "state"))
    latest: dict[str, str] = {}
    spans, began, up_then, applied = [], None, [], 0
    for moment in sorted(t for t in moments if start_ns <= t <= end_ns):
        while applied < len(changes) and changes[applied][0] <= moment:
            _, node, state = changes[applied]
            latest[node] = state
            applied += 1
        recent = [t for t in touched if t.start_ns <= moment < t.end_ns + RECOVERY_NS]
        now = [t for t in recent if moment < t.end_ns]
        untouched = [n for n in nodes if not any(n in t.nodes and not t.cut for t in recent)]
        up = largest_connected(untouched, (link for t in recent for link in t.cut))
        out = {n for t in now if t.out for n in t.nodes}
        cut_now = {link for t in now for link in t.cut}  # partitions piled up cut together
        out |= {n for n in nodes if cut_now and unheard(cut_now, n, nodes)}
        leading = any(latest.get(n) == "leader" for n in nodes if n not in out)
        stuck = moment < end_ns and len(up) * 2 > len(nodes) and not leading
        if stuck and began is None:
            began, up_then = moment, up
        elif not stuck and began is not None:
            spans.append({"time_ns": began, "ms": round((moment - began) / 1e6, 1), "nodes": up_then})
            began = None
    return sorted(spans, key=lambda span: -span["ms"])


def stuck_in(
    history: pd.DataFrame, transitions: pd.DataFrame, being_made: pd.DataFrame, end_ns: int | None = None
) -> list[dict[str, Any]] | None:
    """A run's stuck spans (`stuck_spans`), longest first, from its history,
    the nodes' logged transitions and its faults from their invocation
    (`fault_windows(..., from_invoke=True)`), up to `end_ns` (None: the
    history's last row); None where the voter set changed in the run, so
    that what a majority is was not fixed."""
    if nemesis_done(history)["f"].isin(RESHAPING).any():
        return None
    if not len(history):
        return []
    nodes = sorted(transitions["node"].dropna().unique())
    start_ns, last_ns = int(history["time_ns"].min()), int(history["time_ns"].max())
    return stuck_spans(transitions, touches(history, being_made, nodes), nodes, start_ns, end_ns or last_ns)


def _touched(node_faults: pd.DataFrame, node: str, since_ns: int, until_ns: int) -> bool:
    """Whether a fault that takes nodes down hit `node` between its election and `until_ns`."""
    overlapping = node_faults[(node_faults["start_ns"] <= until_ns) & (node_faults["end_ns"] >= since_ns)]
    return any(node in nodes for nodes in overlapping["nodes"])


def availability(history: pd.DataFrame, events: pd.DataFrame, clients: dict[str, Any] | None = None) -> dict[str, Any]:
    """The figures; `clients` the client operations' (`ClientTally.figures`)
    where the history given holds only some of them (a run checked in
    pieces), else they are worked out here."""
    span_ns = int(history["time_ns"].max() - history["time_ns"].min()) if len(history) else 0
    windows = fault_windows(history)
    transitions = logged_transitions(events)
    being_made = fault_windows(history, from_invoke=True)
    disruptive = disruptive_elections(events, transitions, being_made, _node_faults(history, being_made))
    stuck = stuck_in(history, transitions, being_made)
    stats = {
        "leader_elections": int((transitions["state"] == "leader").sum()),
        "resignations": int((transitions["state"] == "resigned").sum()),
        "epochs": int(events["epoch"].dropna().nunique()),
        "leaderless_ms": round(_leaderless_ms(transitions, span_ns), 1),
        "stuck_ms": None if stuck is None else (stuck[0]["ms"] if stuck else 0.0),
        "stuck": (stuck or [])[:STUCK_LISTED],
        "disruptive_elections": len(disruptive),
        "disruptive": disruptive[:20],
        "clients": client_figures(history, windows) if clients is None else clients,
        "fault_windows": len(windows),
    }
    verdict = result([], stats)
    verdict["stats"].pop("anomalies")
    return verdict


def _judged(t: Tables) -> Result:
    return availability(t.history, t.events, t.client_figures)


CHECKER = Rule(NAME, always, _judged)
