"""`committed-data-loss`: what was acknowledged stays, where it was acknowledged.

Reads the append history, each node's final committed log (`final`; a
node read back as holding nothing at all, its log or stream gone, is a row
with no offset) and the nodes' truncation events. `info` appends may or may not be in the log;
`fail` appends must not be. A node that started on a damaged log and cut it
back (`log-truncated`, as the `corrupt` fault makes) is named in the stats
(`cut_back`), with the committed records it lost until it caught up: no
anomaly, as long as every acknowledged append is still everywhere. Where a target's events say which replicas a
commit counted (KIP-380 generations: `replicas`), also the generation rule:
once a leader has heard from a new life of a replica, it counts only offsets
that life reported.

The checker is its cases, each a function that defines one kind of anomaly
in its docstring (checkers/cases.py): `lost_acknowledged_appends`,
`divergent_committed_logs`, `duplicate_appends`, `failed_appends_committed`,
`truncated_committed` and `earlier_generations_counted`;
`committed_data_loss` gathers them. The first four need the nodes' final
copies, so a live look (`committed_data_loss_so_far`) judges the others alone.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from history.schema import arrow

from .cases import Anomaly, case, more_of
from .checker import Result, Rule, Tables
from .result import result

NAME = "committed-data-loss"
# Each case lists its first MAX_CASES anomalies (`stats.lost_appends` counts every lost append).
MAX_CASES = 20


def committed_data_loss(history: pd.DataFrame, final: pd.DataFrame, events: pd.DataFrame) -> dict[str, Any]:
    """The checker: each case below finds one kind of anomaly (Elle's `-cases`),
    and the verdict holds them all, with the figures a reader wants beside them."""
    appends = Appends.of(history, final)
    lost = Lost.of(appends)
    anomalies = [
        *lost_acknowledged_appends(appends, lost),
        *divergent_committed_logs(appends),
        *duplicate_appends(appends),
        *failed_appends_committed(appends),
        *truncated_committed(events),
        *earlier_generations_counted(events),
    ]
    stats = {
        "acknowledged": len(appends.acked),
        "failed": len(appends.failed),
        "nodes": len(lost.nodes),
        "final_records": appends.final_records,
        "lost_appends": int(lost.anywhere.sum()),
        "cut_back": logs_cut_back(events),
    }
    verdict = result(anomalies, stats)
    if not anomalies and len(appends.acked) and not lost.nodes:
        verdict.update(
            valid="unknown", error="no final committed log was read, so acknowledged appends cannot be checked"
        )
    return verdict


def committed_data_loss_so_far(events: pd.DataFrame) -> dict[str, Any]:
    """The cases the nodes' logs alone show (`truncated_committed`,
    `earlier_generations_counted`): what a run's first part can tell before
    any final log is read (checkers/verdict.py's `check_prefix`)."""
    return result([*truncated_committed(events), *earlier_generations_counted(events)])


def committed_data_loss_in_windows(
    windows: Iterable[tuple[pd.DataFrame, pd.DataFrame]],
    failed: pd.DataFrame,
    events: pd.DataFrame,
    holding: Callable[[np.ndarray], pd.DataFrame],
) -> dict[str, Any]:
    """The checker over a run too large to hold (checkers/pieces.py), its
    places (offsets) in windows: each window is the history's acknowledged
    appends at its places and every node's final records there (a node with
    none there a row with no offset, as for a log read back empty). What is
    judged place by place (lost and divergent records) is judged in its
    window. A value held in two windows is found by a hash of each window's
    values (`value_hashes`: 8 bytes a value, all this keeps of the records),
    and then `holding` gives the final records whose values have those
    hashes, to tell which node holds it where (`duplicate_appends` finds a
    value held twice within one window). So is one of `failed` (the
    definitely failed appends, which have no place) among them: hashed once,
    not looked for in every window."""
    lost_found: list[Anomaly] = []
    divergent: list[Anomaly] = []
    duplicates: list[Anomaly] = []
    stats = {"acknowledged": 0, "final_records": 0, "lost_appends": 0}
    nodes: set[str] = set()
    hashes = []
    for history, final in windows:
        appends = Appends.of(history, final)
        lost = Lost.of(appends)
        lost_found += lost_acknowledged_appends(appends, lost)
        divergent += divergent_committed_logs(appends)
        duplicates += duplicate_appends(appends)
        stats["acknowledged"] += len(appends.acked)
        stats["final_records"] += appends.final_records
        stats["lost_appends"] += int(lost.anywhere.sum())
        nodes |= set(lost.nodes)
        coded = appends.coded
        hashes.append(value_hashes(coded.value_names.take(np.unique(coded.record_value[_appended(coded)]))))
    everywhere = _sorted_hashes(hashes)
    found_all = [
        *lost_found[:MAX_CASES],
        *divergent[:MAX_CASES],
        *(duplicates + _across_windows(duplicates, everywhere, holding))[:MAX_CASES],
        *_failed_in_windows(failed, everywhere, holding),
        *truncated_committed(events),
        *earlier_generations_counted(events),
    ]
    verdict = result(
        found_all,
        {**stats, "failed": len(failed), "nodes": len(nodes), "cut_back": logs_cut_back(events)},
    )
    if not found_all and stats["acknowledged"] and not nodes:
        verdict.update(
            valid="unknown", error="no final committed log was read, so acknowledged appends cannot be checked"
        )
    return verdict


@dataclass(frozen=True)
class Appends:
    """What every case reads: the clients' acknowledged and definitely failed
    appends, the nodes' final records (a log equal to another node's is kept
    once, as that node's: `copy_of`), coded as integers (`_Coded`), and the
    nodes read back as holding nothing (a final row with no offset: the log
    or stream is gone)."""

    acked: pd.DataFrame
    failed: pd.DataFrame
    records: pd.DataFrame
    copy_of: dict[str, str]
    coded: _Coded
    empty: list[str]
    final_records: int

    @classmethod
    def of(cls, history: pd.DataFrame, final: pd.DataFrame) -> Appends:
        client_appends = (history["f"] == "append").to_numpy(dtype=bool, na_value=False) & (
            history["process"] >= 0
        ).to_numpy()
        kind = history["type"]
        columns = ["index", "key", "value", "offset"]
        acked = history.loc[
            client_appends & ((kind == "ok") & history["offset"].notna()).to_numpy(dtype=bool, na_value=False), columns
        ]
        failed = history.loc[client_appends & (kind == "fail").to_numpy(dtype=bool, na_value=False), columns]
        # A record's place is (key, offset): keyed appends (etcd) are one list per
        # key; the reference quorum's unkeyed ones one log (key "").
        placed = final["offset"].notna().to_numpy()
        # (Neither a column selection nor a new index where every record is placed: each copied 5M rows.)
        records = final if placed.all() else final[placed].reset_index(drop=True)
        distinct, copy_of = _distinct_logs(records)
        coded = _Coded(acked, distinct)
        empty = sorted(set(final.loc[~placed, "node"].dropna()) - {*coded.node_names, *copy_of})
        return cls(acked, failed, distinct, copy_of, coded, empty, len(records))


@dataclass(frozen=True)
class Lost:
    """Per node, where each acknowledged append sits in `records` (-1: not
    there) and whether it is missing (absent, or another value); `nodes` in
    the order the anomalies name them."""

    nodes: list[str]
    found_at: dict[str, np.ndarray]
    missing: dict[str, np.ndarray]
    anywhere: np.ndarray

    @classmethod
    def of(cls, appends: Appends) -> Lost:
        coded, acked = appends.coded, appends.acked
        found_at: dict[str, np.ndarray] = {}
        missing: dict[str, np.ndarray] = {}
        # Sorted once, the acknowledged places are looked up in each node's log in order (twice as fast as unsorted).
        order = np.argsort(coded.acked_place, kind="stable")
        wanted = coded.acked_place[order]
        node_by_place = coded.record_node[coded.by_place]
        for number, node in enumerate(coded.node_names):
            # A node's valued records in place order (a null record matches nothing, as no record does).
            mine = coded.by_place[node_by_place == number]
            places = coded.record_place[mine]
            at = np.minimum(np.searchsorted(places, wanted), max(len(mine) - 1, 0))
            there = np.zeros(len(acked), dtype=bool)
            found_at[node] = np.full(len(acked), -1, dtype="int64")
            if len(mine):
                there[order] = places[at] == wanted
                found_at[node][order] = np.where(there[order], mine[at], -1)
            # A missing record is as lost as a different one (an acknowledged value that is null matches nothing).
            same = there & (coded.record_value[found_at[node]] == coded.acked_value) & (coded.acked_value >= 0)
            missing[node] = ~same
        for copy, node in appends.copy_of.items():
            found_at[copy], missing[copy] = found_at[node], missing[node]
        # A node read back as holding nothing lacks every record.
        for node in appends.empty:
            found_at[node], missing[node] = np.full(len(acked), -1, dtype="int64"), np.ones(len(acked), dtype=bool)
        nodes = sorted([*coded.node_names, *appends.copy_of]) + appends.empty
        anywhere = np.logical_or.reduce(list(missing.values())) if nodes else np.zeros(len(acked), dtype=bool)
        return cls(nodes, found_at, missing, anywhere)


@case(NAME, "lost-acknowledged-append", final_copies=True)
def lost_acknowledged_appends(appends: Appends, lost: Lost) -> list[Anomaly]:
    """An append acknowledged at a place that some node's final log does not
    hold there, with its value (nothing there, or another record).

    One per append (the first MAX_CASES), naming every node that lacks it
    and what each holds there instead."""
    anomalies = []
    for position in np.flatnonzero(lost.anywhere)[:MAX_CASES]:
        row = appends.acked.iloc[position]
        held = {
            node: None
            if lost.found_at[node][position] < 0
            else appends.records["value"].iat[lost.found_at[node][position]]
            for node in lost.nodes
            if lost.missing[node][position]
        }
        found = {node: None if value is None or pd.isna(value) else value for node, value in held.items()}
        others = [f"{node} has {value}" for node, value in found.items() if value is not None]
        anomalies.append(
            {
                "index": int(row["index"]),
                **({"key": row["key"]} if not pd.isna(row["key"]) else {}),
                "offset": int(row["offset"]),
                "value": row["value"],
                "nodes": sorted(found),
                "found": found,
                "summary": f"append {row['value']}{_to(row['key'])} acknowledged at offset {row['offset']} (row {row['index']}) "
                f"is not on {', '.join(sorted(found))}" + (f" ({'; '.join(others)} there)" if others else ""),
            }
        )
    return anomalies


@case(NAME, "divergent-committed-logs", final_copies=True)
def divergent_committed_logs(appends: Appends) -> list[Anomaly]:
    """Two nodes' final logs hold different records at one place; committed
    prefixes must agree.

    One per place, with every node's record there."""
    coded, records = appends.coded, appends.records
    anomalies = []
    for place in coded.divergent_places()[:MAX_CASES]:
        key, offset = coded.key_names[place // coded.stride], int(place % coded.stride)
        held = records.iloc[np.flatnonzero(coded.record_place == place)][["node", "value"]].to_dict("records")
        values = sorted(
            (
                {"node": holder, "value": record["value"]}
                for record in held
                for holder in _holders(record["node"], appends.copy_of)
            ),
            key=lambda record: (record["node"], str(record["value"])),
        )
        anomalies.append(
            {
                **({"key": key} if key else {}),
                "offset": offset,
                "values": values,
                "summary": f"nodes committed different records at offset {offset}{_of(key)}",
            }
        )
    return anomalies


def _appended(coded: _Coded) -> np.ndarray:
    """Which records are clients' appends (a `{`-value is a record the quorum
    wrote itself, such as a leader's)."""
    acked: np.ndarray = (coded.record_value >= 0) & ~coded.value_is_record[coded.record_value]
    return acked


@case(NAME, "duplicate-append", final_copies=True)
def duplicate_appends(appends: Appends) -> list[Anomaly]:
    """A node's final log holds one append's value at two places or more
    (every value a client appends is unique)."""
    coded, copy_of = appends.coded, appends.copy_of
    appended = _appended(coded)
    pair = (
        coded.record_node[appended].astype("int64") * len(coded.value_names) + coded.record_value[appended]
    )  # (node, value)
    ordered = np.sort(pair)
    twice = np.unique(ordered[1:][ordered[1:] == ordered[:-1]])
    named = sorted(
        (holder, coded.value_names[p % len(coded.value_names)], p)
        for p in twice
        for holder in _holders(coded.node_names[p // len(coded.value_names)], copy_of)
    )
    return [
        _duplicate(node, value, coded.record_offset[appended][pair == node_value])
        for node, value, node_value in named[:MAX_CASES]
    ]


def _duplicate(node: str, value: str, offsets: np.ndarray) -> dict[str, Any]:
    """A duplicate append: `node` holds `value` at these offsets."""
    return {
        "node": node,
        "value": value,
        "offsets": [int(offsets.min()), int(offsets.max())],
        "summary": f"{node} holds append {value} {len(offsets)} times",
    }


@case(NAME, "failed-append-committed", final_copies=True)
def failed_appends_committed(appends: Appends) -> list[Anomaly]:
    """An append the target said definitely did not happen (`fail`) is in
    some node's final log."""
    coded, failed = appends.coded, appends.failed
    appended = _appended(coded)
    committed = np.zeros(len(coded.value_names) + 1, dtype=bool)
    committed[coded.record_value[appended]] = True
    codes = (
        pd.Index(coded.value_names).get_indexer(failed["value"].astype(object))
        if len(failed)
        else np.zeros(0, dtype=int)
    )
    return _resurrected(failed[committed[codes] & (codes >= 0)])


def _resurrected(failed: pd.DataFrame) -> list[dict[str, Any]]:
    """These definitely failed appends, each found committed."""
    return [
        {
            "index": int(row["index"]),
            "value": row["value"],
            "summary": f"append {row['value']} failed definitely (row {row['index']}) yet was committed",
        }
        for _, row in failed.head(MAX_CASES).iterrows()
    ]


@case(NAME, "truncated-committed")
def truncated_committed(events: pd.DataFrame) -> list[Anomaly]:
    """A node cut its log below its own high watermark (a `truncate` event
    whose offset is under its hwm)."""
    truncations = events.loc[events["event"] == "truncate", ["node", "time_ns", "offset", "hwm"]].dropna(
        subset=["offset", "hwm"]
    )
    below = truncations[truncations["offset"] < truncations["hwm"]]
    return [
        {
            "node": row["node"],
            "time_ns": int(row["time_ns"]),
            "offset": int(row["offset"]),
            "hwm": int(row["hwm"]),
            "summary": f"{row['node']} truncated to {row['offset']} below its high watermark {row['hwm']}",
        }
        for _, row in below.head(MAX_CASES).iterrows()
    ]


def _distinct_logs(records: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, str]]:
    """The records without the logs that equal an earlier node's, and which
    node each left-out log equals (copy -> node). Most runs end with every
    node holding the same log, and then only one of five is coded. Logs are
    compared only where each node's records lie together, the nodes in
    order: as a run writes them; otherwise every log is kept."""
    if len(records) < 2:
        return records, {}
    node = arrow(records["node"])
    if node.null_count:
        return records, {}
    starts = np.append(0, np.flatnonzero(pc.not_equal(node[1:], node[:-1]).to_numpy(zero_copy_only=False)) + 1)
    names = node.take(pa.array(starts)).to_pylist()
    if len(set(names)) < len(names):
        return records, {}
    ends = np.append(starts[1:], len(node))
    table = pa.Table.from_pandas(records[["key", "offset", "value"]], preserve_index=False)
    kept: list[Any] = []
    copy_of: dict[Any, Any] = {}
    for name, start, end in zip(names, starts, ends):
        log = table.slice(start, end - start)
        same = next((other for other, at, until in kept if table.slice(at, until - at).equals(log)), None)
        if same is None:
            kept.append((name, start, end))
        else:
            copy_of[name] = same
    if not copy_of:
        return records, {}
    # Slices, not a take: a kept log is one run of rows.
    return pd.concat([records.iloc[start:end] for _, start, end in kept], ignore_index=True), copy_of


def value_hashes(values: pd.Series) -> np.ndarray:
    """A 64-bit hash of each value (a run checked in windows compares values across them by it)."""
    hashed: np.ndarray = pd.util.hash_array(values.to_numpy(dtype=object, na_value=""), categorize=False)
    return hashed


def _sorted_hashes(hashes: list[np.ndarray]) -> np.ndarray:
    """Each window's distinct committed values' hashes, as one sorted array
    (8 bytes a value: held once, and sorted in place)."""
    everywhere = np.concatenate(hashes) if hashes else np.zeros(0, dtype="uint64")
    hashes.clear()
    everywhere.sort()
    return everywhere


@more_of("failed-append-committed")
def _failed_in_windows(
    failed: pd.DataFrame, everywhere: np.ndarray, holding: Callable[[np.ndarray], pd.DataFrame]
) -> list[Anomaly]:
    """Failed appends committed, over windows: each definitely failed append
    whose value's hash is among the committed values' (`everywhere`, sorted)
    and that a final record holding it confirms. The failed appends are
    hashed once, not looked for in every window: a soak fails millions."""
    if failed.empty:
        return []
    maybe = failed[np.isin(value_hashes(failed["value"]), everywhere)]
    if maybe.empty:
        return []
    held = holding(np.unique(value_hashes(maybe["value"]))).dropna(subset=["offset"])
    return _resurrected(maybe[maybe["value"].isin(set(held["value"].dropna()))])


@more_of("duplicate-append")
def _across_windows(
    within: list[Anomaly], everywhere: np.ndarray, holding: Callable[[np.ndarray], pd.DataFrame]
) -> list[Anomaly]:
    """Duplicate appends of values held in two windows (`everywhere`: each
    window's distinct values' hashes, sorted), but for those `within` one window named."""
    twice = np.unique(everywhere[1:][everywhere[1:] == everywhere[:-1]])
    if not len(twice):
        return []
    named = {(a["node"], a["value"]) for a in within}
    return [a for a in _held_twice(holding(twice)) if (a["node"], a["value"]) not in named]


def _held_twice(records: pd.DataFrame) -> list[dict[str, Any]]:
    """Duplicate appends of these final records (node, offset, value): each
    client append's value a node holds at two places or more."""
    appended = records.dropna(subset=["offset", "value"])
    appended = appended[~appended["value"].str.startswith("{").fillna(False).to_numpy(dtype=bool)]
    held = appended.groupby(["node", "value"], sort=True)["offset"]
    return [
        _duplicate(node, value, offsets.to_numpy(dtype="int64"))
        for (node, value), offsets in held
        if offsets.nunique() > 1
    ]


def _holders(node: str, copy_of: dict[str, str]) -> list[str]:
    """The node and those whose logs equal it."""
    return [node, *(copy for copy, original in copy_of.items() if original == node)]


class _Coded:
    """The acknowledged appends' and the final records' places, values and
    nodes as integer codes: a place is its key's code times `stride` (beyond
    every offset) plus its offset; a null value is -1. Keys and nodes are
    coded in the sorted order of their names.

    Values are coded without hashing every record's: each node's log holds
    mostly the same value at a place as the others. The valued records,
    sorted by place, are compared each with the one before it; the first at
    a place and any that differs from the one before (an anchor) are hashed,
    and every other record takes the code of the anchor before it, whose
    value it has. An acknowledged append equal to the first record at its
    place takes that one's code, and only the others are hashed."""

    def __init__(self, acked: pd.DataFrame, records: pd.DataFrame) -> None:
        n = len(acked)
        key_codes, self.key_names = _key_codes(acked["key"], records["key"])
        offsets = np.concatenate([acked["offset"].to_numpy(dtype="int64"), records["offset"].to_numpy(dtype="int64")])
        self.stride = int(offsets.max()) + 1 if len(offsets) else 1
        places = key_codes.astype("int64") * self.stride + offsets
        self.acked_place, self.record_place, self.record_offset = places[:n], places[n:], offsets[n:]
        node_codes, names = pd.factorize(records["node"], sort=True)
        self.record_node, self.node_names = node_codes, list(names)

        values, acked_values = records["value"].array, acked["value"].array
        self.anchor = anchor = self._order_by_place(values)
        as_first, first_at = self._as_first(acked_values, values)
        own = np.flatnonzero(~as_first & ~acked_values.isna())  # acknowledged values hashed themselves
        anchors = self.by_place[anchor]
        codes, names = pd.factorize(
            pd.concat([pd.Series(values.take(anchors)), pd.Series(acked_values.take(own))], ignore_index=True)
        )
        self.value_names = pd.Series(names, dtype=object)
        self.record_value = np.full(len(records), -1, dtype="int64")
        self.record_value[self.by_place] = codes[np.cumsum(anchor) - 1]
        self.acked_value = np.full(n, -1, dtype="int64")
        self.acked_value[as_first] = self.record_value[first_at[as_first]]
        self.acked_value[own] = codes[len(anchors) :]
        # Indexed by a value's code; the last entry answers for code -1 (null).
        starts = pd.Series(names).str.startswith("{").fillna(False).to_numpy(dtype=bool)
        self.value_is_record = np.append(starts, False)

    def _order_by_place(self, values: pd.Series) -> np.ndarray:
        """Sorts the valued records by place (`by_place`), marks the first at
        each place (`first`), and returns which are anchors."""
        valued = np.flatnonzero(~values.isna())
        self.by_place = valued[np.argsort(self.record_place[valued], kind="stable")]
        place = self.record_place[self.by_place]
        self.first = np.ones(len(place), dtype=bool)
        self.first[1:] = place[1:] != place[:-1]
        in_order = values.take(self.by_place)
        anchor = self.first.copy()
        anchor[1:] |= (in_order[1:] != in_order[:-1]).to_numpy(dtype=bool, na_value=True)
        return anchor

    def _as_first(self, acked_values: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Which acknowledged values equal the first record at their place (or
        the nearest place after it), and that record's position for each."""
        first_at = self.by_place[self.first]
        if not len(first_at):
            return np.zeros(len(acked_values), dtype=bool), np.zeros(len(acked_values), dtype="int64")
        places = self.record_place[first_at]
        first_at = first_at[np.minimum(np.searchsorted(places, self.acked_place), len(places) - 1)]
        return (acked_values == values.take(first_at)).to_numpy(dtype=bool, na_value=False), first_at

    def divergent_places(self) -> np.ndarray:
        """Places where valued records differ, in order: those with an
        anchor past their first record (a value unlike the one before it)."""
        places = self.record_place[self.by_place][self.anchor & ~self.first]
        first: np.ndarray = places[np.append(True, places[1:] != places[:-1])] if len(places) else places
        return first


def _key_codes(acked: pd.Series, records: pd.Series) -> tuple[np.ndarray, list[str]]:
    """Each row's key code (null as ""), acknowledged appends' then records'; the names in sorted order."""
    if acked.isna().all() and records.isna().all():  # one unkeyed log: no strings to hash
        return np.zeros(len(acked) + len(records), dtype="int64"), [""]
    codes, names = pd.factorize(pd.concat([acked.fillna(""), records.fillna("")], ignore_index=True), sort=True)
    return codes, list(names)


def logs_cut_back(events: pd.DataFrame) -> list[dict[str, Any]]:
    """Each start on a damaged log cut back to its last valid record: the
    records kept, and how many the cluster had committed by then (the highest
    high watermark any node logged before it)."""
    cut = events.loc[events["event"] == "log-truncated", ["node", "time_ns", "offset"]].dropna(subset=["offset"])
    if cut.empty:
        return []
    commits = events[events["event"] == "commit"].dropna(subset=["hwm"]).sort_values("time_ns")
    times, marks = commits["time_ns"].to_numpy(), np.maximum.accumulate(commits["hwm"].to_numpy(dtype="int64"))
    found = []
    for row in cut.head(MAX_CASES).itertuples(index=False):
        before = np.searchsorted(times, row.time_ns, side="left")
        committed = int(marks[before - 1]) if before else 0
        kept = int(row.offset)
        span = f"offset {kept}" if committed == kept + 1 else f"offsets {kept} to {committed - 1}"
        gone = (
            f"{span}, committed, gone from it until it caught up" if committed > kept else "nothing committed was lost"
        )
        found.append(
            {
                "node": row.node,
                "time_ns": int(row.time_ns),
                "kept": kept,
                "committed": committed,
                "summary": f"{row.node} started on a damaged log and cut it back to {kept} records: {gone}",
            }
        )
    return found


@case(NAME, "counted-earlier-generation")
def earlier_generations_counted(events: pd.DataFrame) -> list[Anomaly]:
    """A leader counted a replica's offset toward a commit from another
    generation than the one it last heard from in that epoch (a later life,
    or the first of a new disk): KIP-380's generation rule broken."""
    heard = events.loc[events["event"] == "generation", ["node", "epoch", "time_ns", "replicas"]].dropna(
        subset=["replicas", "epoch"]
    )
    if heard.empty:
        return []
    heard_at: dict[
        tuple[Any, ...], list[tuple[int, int]]
    ] = {}  # (leader, epoch, replica) -> [(time, later generation)]
    for row in heard.itertuples(index=False):
        for replica, generation, _ in json.loads(row.replicas):
            heard_at.setdefault((row.node, int(row.epoch), replica), []).append((int(row.time_ns), int(generation)))
    leaders = heard[["node", "epoch"]].drop_duplicates()
    commits = events[(events["event"] == "commit")].dropna(subset=["replicas", "epoch"])
    mine = commits.merge(leaders, on=["node", "epoch"])
    found = []
    for row in mine.itertuples(index=False):
        for replica, generation, offset in json.loads(row.replicas):
            # Strictly before: a commit logged in the same instant may have come first.
            before = [(t, g) for t, g in heard_at.get((row.node, int(row.epoch), replica), ()) if t < row.time_ns]
            later = max(before)[1] if before else None
            if generation is not None and later is not None and generation != later:
                found.append(
                    {
                        "node": row.node,
                        "time_ns": int(row.time_ns),
                        "epoch": int(row.epoch),
                        "replica": replica,
                        "offset": offset,
                        "hwm": int(row.hwm),
                        "summary": f"{row.node} (leader of epoch {row.epoch}) counted {replica}'s offset {offset} from generation"
                        f" {generation}, after hearing from its new life (generation {later}), to commit up to {row.hwm}",
                    }
                )
    return found[:MAX_CASES]


def _to(key: str) -> str:
    return "" if pd.isna(key) or key == "" else f" to {key}"


def _of(key: str) -> str:
    return "" if key == "" else f" of {key}"


def _appends(t: Tables) -> bool:
    return "append" in t.client_fs


def _judged(t: Tables) -> Result:
    return committed_data_loss(t.history, t.final, t.events)


def _so_far(t: Tables) -> Result:
    return committed_data_loss_so_far(t.events)


CHECKER = Rule(NAME, _appends, _judged, so_far=_so_far)
