"""What a strategy sees: the nodes' states and statuses at a moment, the
faults in force and the nodes held down or damaged. A run's probes make it
(harness/run.py's `observe`), and so does the simulator; the strategies
(nemesis/strategy.py) decide from it.

Its abstract state (`abstract`): the moment reduced until two that differ
only in node names, exact offsets and exact epochs are one state. The
novelty search is rewarded for reaching states it has not seen, and
checkers/abstract_state.py counts the states a run reached, both by this
function, so a state the search counts is one the report shows. A node's
part is its role (`role_of`, or why it is gone: the fault that holds it
down), how many epochs it is behind the newest any node reports, how far
its log end is behind the longest log, how much of its own log is beyond
its high watermark (uncommitted), and how much of it is not yet on disk
(fsync lag: what a power loss would take, where a node fsyncs on a timer).
The cluster's state is the sorted parts of its nodes and the kinds of the
faults in force. What is not polled is not in it: a target whose status
has no offsets has `?` there, and one whose status does not say what it
fsynced `?` for its fsync lag."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from .coverage import context as context_of
from .coverage import role_of
from .faults import BY_NAME


@dataclass(frozen=True)
class Observation:
    """What the nodes say at a moment: each live node's state, and the kinds
    of faults in force; for the novelty search (nemesis/novelty.py), each
    live node's latest status as an events row, and the nodes held down
    (node -> the fault that holds it); the nodes whose files a fault damaged
    that are not seen repaired yet (`repaired`)."""

    states: dict[str, str]
    in_force: tuple[str, ...] = ()
    rows: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    gone: Mapping[str, str] = field(default_factory=dict)
    damaged: frozenset[str] = frozenset()

    def context(self) -> str:
        return context_of(self.in_force, self.states)

    def nodes_in(self, role: str) -> list[str]:
        return sorted(node for node, state in self.states.items() if role_of(state) == role)


# A log this many entries behind, or holding this many uncommitted, is as
# good as level: polls of two nodes a moment apart under load differ by
# that much, and novelty in that noise would be no novelty at all.
NEAR_ENTRIES = 32
UNKNOWN = "?"


def epochs_behind(gap: int | None) -> str:
    """`0`, `1`, or `2` (two or more) epochs behind the newest; `?` not known."""
    return UNKNOWN if gap is None else str(min(max(gap, 0), 2))


def entries_behind(gap: int | None) -> str:
    """`0` (level, within NEAR_ENTRIES), `+` (behind by more), `?` not known."""
    return UNKNOWN if gap is None else "0" if gap <= NEAR_ENTRIES else "+"


def _number(value: Any) -> int | None:
    return None if value is None or pd.isna(value) else int(value)


def abstract(rows: Mapping[str, Mapping[str, Any]], in_force: Iterable[str] = (), gone: Mapping[str, str] = {}) -> str:
    """The state of nodes whose latest status rows are `rows` (node -> an
    events row: state, epoch, offset, synced, hwm, leader; None where unknown), with `gone` nodes
    (node -> the fault that holds it: kill, pause, ...) and faults of kinds `in_force`."""
    epochs = [e for row in rows.values() if (e := _number(row.get("epoch"))) is not None]
    offsets = [o for row in rows.values() if (o := _number(row.get("offset"))) is not None]
    top_epoch = max(epochs, default=None)
    top_offset = max(offsets, default=None)
    parts = []
    for node in sorted(set(rows) | set(gone)):
        if node in gone:
            parts.append(gone[node])
            continue
        row = rows[node]
        epoch, offset, hwm = _number(row.get("epoch")), _number(row.get("offset")), _number(row.get("hwm"))
        synced = _number(row.get("synced"))
        behind = None if epoch is None or top_epoch is None else top_epoch - epoch
        lag = None if offset is None or top_offset is None else top_offset - offset
        tail = None if offset is None or hwm is None else offset - hwm
        unsynced = None if offset is None or synced is None else offset - synced
        gaps = "".join(entries_behind(gap) for gap in (lag, tail, unsynced))
        parts.append(f"{stated_role(node, row)}:{epochs_behind(behind)}{gaps}")
    return " ".join(sorted(parts)) + " | " + (",".join(sorted(set(in_force))) or "-")


def stated_role(node: str, row: Mapping[str, Any]) -> str:
    """The role a node states, or, where its status names no state (a target
    may read the leader apart), the one its view of the leader implies."""
    state, leader = row.get("state"), row.get("leader")
    if state is not None:
        return role_of(state)
    return "leader" if leader == node else "follower" if leader is not None else "other"


def holds_down(f: str) -> bool:
    """Whether a fault of kind `f` takes the nodes it hits out of the cluster while in force."""
    fault = BY_NAME.get(f)
    return fault is not None and fault.hits == "node" and not fault.leaves_nodes_up
