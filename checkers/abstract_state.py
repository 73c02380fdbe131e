"""The cluster's abstract state: what the nodes say about themselves (their
status polls, as events rows), reduced until two moments that differ only
in node names, exact offsets and exact epochs are one state. The novelty
search (nemesis/novelty.py) is rewarded for reaching states, and moves
between them, that it has not seen; coverage counts the states and moves a
run reached (checkers/coverage.py). Both compute them here, so a state the
search counts is one the report shows.

How one moment reduces to its state is history/observation.py's
`abstract` (what a strategy observes); here are the states and moves a
run's tables reached.

Pure: functions of the history and events tables.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from history.observation import NEAR_ENTRIES, abstract, holds_down, stated_role
from history.schema import named_nodes

from .availability import fault_windows


def states_reached(history: pd.DataFrame, events: pd.DataFrame) -> list[str]:
    """The run's abstract states in time order (one where it changed), from
    what the nodes said (each events row's state, epoch, offsets and leader,
    where it has them: status polls, and the transitions of a log that
    names states its polls leave out) and the faults in force.

    A run's events can number in the hundreds of thousands, and under load
    nearly every poll says another offset. So each row's state is first
    told apart by what decides it, computed for all rows at once (`_keys`:
    per node, whether it was heard of, its role and bucketed gaps, and the
    stretch of faults), and `abstract` is called only where that changes."""
    said = events.loc[events["node"].notna()].sort_values("time_ns", kind="stable").reset_index(drop=True)
    reached: list[str] = []
    for chunk in _chunks(said):
        for state in _reached(history, chunk):
            if not reached or reached[-1] != state:
                reached.append(state)
    return reached


def _chunks(said: pd.DataFrame) -> Iterator[tuple[pd.DataFrame, int]]:
    """`said` CHUNK_ROWS rows at a time, each chunk after the rows before it
    where each node last said each field, and was last heard of (all the
    state before the chunk depends on), with how many of those come first.
    A run's events are judged a chunk at a time, so the arrays `_keys` makes
    (a row per node per event) do not grow with the run."""
    nodes = said["node"].astype(str).to_numpy()
    present = {name: said[name].notna().to_numpy(dtype=bool) for name in FIELDS}
    present["heard"] = np.ones(len(said), dtype=bool)
    last: dict[tuple[str, str], int] = {}
    for start in range(0, len(said), CHUNK_ROWS):
        end = min(start + CHUNK_ROWS, len(said))
        before = sorted(set(last.values()))
        yield (
            said.take(np.r_[np.array(before, dtype="int64"), np.arange(start, end)]).reset_index(drop=True),
            len(before),
        )
        for name, said_it in present.items():
            rows = start + np.flatnonzero(said_it[start:end])
            seen, at = np.unique(nodes[rows][::-1], return_index=True)
            last.update({(node, name): row for node, row in zip(seen.tolist(), rows[::-1][at].tolist())})


def _reached(history: pd.DataFrame, chunk: tuple[pd.DataFrame, int]) -> list[str]:
    """The abstract states of a chunk's own rows (not of the rows before it that it starts with)."""
    said, skip = chunk
    faults = _faults_in_force(history, said["time_ns"].to_numpy(dtype="int64"))
    latest = _latest(said)
    keys = _keys(said, latest, faults)
    changes = np.flatnonzero(np.r_[True, (keys[1:] != keys[:-1]).any(axis=1)])
    changes = np.r_[skip, changes[changes > skip]] if skip < len(said) else changes[:0]
    reached: list[str] = []
    for at in changes.tolist():
        in_force, gone = faults[at]
        rows = {
            node: node_said.row(said, at)
            for node, node_said in latest.items()
            if node_said.heard[at] and node not in gone
        }
        state = abstract(rows, in_force, gone)
        if not reached or reached[-1] != state:
            reached.append(state)
    return reached


FIELDS = ("state", "epoch", "offset", "synced", "hwm", "leader")
CHUNK_ROWS = 250_000
GAPS = ("epoch", "offset", "hwm", "synced")


@dataclass(frozen=True)
class _Said:
    """What one node had said by each row: whether it was heard of, and per
    field the row where it last said a value (-1: none yet)."""

    heard: np.ndarray
    index: dict[str, np.ndarray]

    def row(self, said: pd.DataFrame, at: int) -> dict[str, Any]:
        """Its latest status at row `at`, as `abstract` takes it (None where it said none)."""
        return {name: None if (where := int(self.index[name][at])) < 0 else said[name].iat[where] for name in FIELDS}

    def latest(self, values: np.ndarray, name: str, missing: Any) -> np.ndarray:
        """`values` (one per row of the table) at the row of this node's latest `name`, `missing` before any."""
        index = self.index[name]
        found: np.ndarray = np.where(index >= 0, values[index], missing)
        return found


def _latest(said: pd.DataFrame) -> dict[str, _Said]:
    nodes = said["node"].astype(str).to_numpy()
    rows = np.arange(len(said))
    present = {name: said[name].notna().to_numpy(dtype=bool) for name in FIELDS}
    latest = {}
    for node in sorted(set(nodes.tolist())):
        mine = nodes == node
        index = {name: np.maximum.accumulate(np.where(mine & present[name], rows, -1)) for name in FIELDS}
        latest[node] = _Said(np.cumsum(mine) > 0, index)
    return latest


def _keys(said: pd.DataFrame, latest: dict[str, _Said], faults: list[tuple[list[str], dict[str, str]]]) -> np.ndarray:
    """Per row, integers that differ wherever the abstract state may: the
    stretch of faults, and per node whether it counts (heard of, not held
    down), its role, and its gaps as `abstract` buckets them."""
    stretch = pd.factorize(np.array([id(f) for f in faults]))[0]
    _, first_rows = np.unique(stretch, return_index=True)
    held_down = [faults[row][1] for row in first_rows.tolist()]  # each stretch's nodes held down
    counted = np.array(
        [
            node_said.heard & ~np.array([node in gone for gone in held_down])[stretch]
            for node, node_said in latest.items()
        ]
    )
    values = {name: said[name].to_numpy(dtype="float64", na_value=np.nan) for name in GAPS}
    numbers = {name: np.array([s.latest(values[name], name, np.nan) for s in latest.values()]) for name in GAPS}

    def top(gaps: np.ndarray) -> np.ndarray:
        held = np.where(counted, gaps, np.nan)
        found = ~np.isnan(held).all(axis=0)
        return np.where(found, np.max(np.where(np.isnan(held), -np.inf, held), axis=0), np.nan)

    behind = top(numbers["epoch"]) - numbers["epoch"]
    lag = top(numbers["offset"]) - numbers["offset"]
    tail = numbers["offset"] - numbers["hwm"]
    unsynced = numbers["offset"] - numbers["synced"]
    per_node = [
        counted,
        np.array(_roles(said, latest)),
        np.where(np.isnan(behind), -1, np.clip(np.nan_to_num(behind), 0, 2)),
        np.where(np.isnan(lag), -1, np.nan_to_num(lag) > NEAR_ENTRIES),
        np.where(np.isnan(tail), -1, np.nan_to_num(tail) > NEAR_ENTRIES),
        np.where(np.isnan(unsynced), -1, np.nan_to_num(unsynced) > NEAR_ENTRIES),
    ]
    return np.column_stack([stretch, *(part.T.astype("int64") for part in per_node)])


def _roles(said: pd.DataFrame, latest: dict[str, _Said]) -> list[np.ndarray]:
    """Each node's role at each row as codes: `stated_role`, worked out once per
    distinct (state, leader) it said."""
    states, state_names = pd.factorize(said["state"])
    leaders, leader_names = pd.factorize(said["leader"])
    width = len(leader_names) + 1
    found = []
    for node, node_said in latest.items():
        pair = node_said.latest(states, "state", -1) * width + node_said.latest(leaders, "leader", -1) + 1
        codes, distinct = pd.factorize(pair)
        roles = [
            stated_role(
                node, {"state": None if s < 0 else state_names[s], "leader": None if ld < 0 else leader_names[ld]}
            )
            for s, ld in ((int(p) // width, int(p) % width - 1) for p in distinct)
        ]
        found.append(pd.factorize(pd.Series(roles, dtype=object))[0][codes])
    return found


def _faults_in_force(history: pd.DataFrame, times: np.ndarray) -> list[tuple[list[str], dict[str, str]]]:
    """At each of `times`, the kinds of the faults in force and the nodes held
    down: one (shared) value per stretch between windows' edges."""
    windows = fault_windows(history)
    spans = [
        (str(f), int(start), int(end), [n for n in named_nodes(node) if isinstance(n, str)])
        for f, start, end, node in zip(windows["f"], windows["start_ns"], windows["end_ns"], windows["node"])
    ]
    edges = np.unique([t for _, start, end, _ in spans for t in (start, end)])
    stretch = np.searchsorted(edges, times, side="right")
    found: dict[int, tuple[list[str], dict[str, str]]] = {}
    for k in np.unique(stretch).tolist():
        t = int(edges[k - 1]) if k else -1  # any time of the stretch: its first
        in_force = [f for f, start, end, _ in spans if start <= t < end]
        gone = {n: f for f, start, end, nodes in spans if start <= t < end and holds_down(f) for n in nodes}
        found[k] = (in_force, gone)
    return [found[k] for k in stretch.tolist()]


def transitions(reached: list[str]) -> set[tuple[str, str]]:
    """The moves between consecutive states."""
    return set(zip(reached, reached[1:]))


def state_coverage(history: pd.DataFrame, events: pd.DataFrame) -> dict[str, Any]:
    """For the verdict's coverage: each state reached and how often it was
    entered, and the moves between states (a campaign adds them up)."""
    reached = states_reached(history, events)
    entered: dict[str, int] = {}
    for state in reached:
        entered[state] = entered.get(state, 0) + 1
    return {"states": entered, "transitions": sorted([a, b] for a, b in transitions(reached))}


def add_up_states(coverages: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Runs' state coverage together: each state's entries summed, the moves united."""
    entered: dict[str, int] = {}
    moves: set[tuple[str, str]] = set()
    for covered in coverages:
        for state, times in (covered.get("states") or {}).items():
            entered[state] = entered.get(state, 0) + int(times)
        moves |= {(a, b) for a, b in covered.get("transitions") or []}
    return {"states": entered, "transitions": sorted([a, b] for a, b in moves)}
