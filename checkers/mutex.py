"""`mutual-exclusion`: a lock is held by one client at a time, and what a
holder writes under it is not lost.

Reads the lock workload's history (`acquire`, `add`, `release`: see
`workloads.generators.LockWorkload`) and each member's final copy of the
guarded list. A lease-based lock (etcd's) promises exclusion only while the
holder's lease lives, so a hold is trimmed to what the client could rely on:

- A client holds the lock from its acquire's answer until it invokes its
  release, and never beyond the earliest moment its lease may expire: the
  acquire's invocation plus the lease's TTL (the acquire's value), since the
  lease was granted after that. Two holds that still overlap are two clients
  holding the lock at once (`overlapping-holds`). A grant that came after
  that moment is a hold the client could not rely on at all (`late_grants`
  in the stats): etcd #11456, a lock granted on an expired lease, shows so.
- An `add` reads the guarded list and writes it one longer, with no compare.
  Two acknowledged adds that read it at the same length (`offset`) overwrote
  one another (`same-place-adds`); an acknowledged add missing from a
  member's final list was overwritten (`lost-guarded-add`). Either means two
  critical sections overlapped, whatever the clients believed.
"""

from __future__ import annotations

import json
from typing import Any

import pandas as pd

from .cases import Anomaly, case
from .checker import Result, Rule, Tables
from .result import result

NAME = "mutual-exclusion"
LOCK_FS = frozenset({"acquire", "add", "release"})
LIMIT = 20  # anomalies of each kind listed


def operations(history: pd.DataFrame) -> pd.DataFrame:
    """The lock workload's operations, an invocation beside its completion
    (`type`, `time_ns`, `value`, `offset`, `index` of each; the completion's
    columns end in `_done`); an operation the run cut short has none."""
    rows = history[(history["process"] >= 0) & history["f"].isin(LOCK_FS)].sort_values("index", kind="stable")
    calls = rows[rows["type"] == "invoke"]
    done = rows[rows["type"] != "invoke"]
    calls = calls.assign(n=calls.groupby("process").cumcount())
    done = done.assign(n=done.groupby("process").cumcount())
    columns = ["process", "n", "type", "time_ns", "value", "offset", "index"]
    return calls[["f", *columns]].merge(done[columns], on=["process", "n"], how="left", suffixes=("", "_done"))


def holds(ops: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """Each granted acquire as a hold (`start`, `end`, `key`, `index`), and
    how many were granted too late to be relied on."""
    acquired = ops[(ops["f"] == "acquire") & (ops["type_done"] == "ok")]
    ttl_ns = acquired["value"].map(lambda v: json.loads(v)["ttl_ms"] * 1_000_000)
    released = ops[ops["f"] == "release"].groupby("value")["time_ns"].min()
    release_ns = acquired["value_done"].map(released).astype("float64")
    lease_ns = (acquired["time_ns"] + ttl_ns).astype("float64")
    table = pd.DataFrame(
        {
            "start": acquired["time_ns_done"].astype("int64"),
            "end": release_ns.fillna(lease_ns).clip(upper=lease_ns).astype("int64"),
            "key": acquired["value_done"],
            "index": acquired["index_done"].astype("int64"),
        }
    )
    late = table["start"] >= table["end"]
    return table[~late].sort_values("start", kind="stable"), int(late.sum())


@case(NAME, "overlapping-holds")
def overlapping_holds(table: pd.DataFrame) -> list[Anomaly]:
    """Two clients held the lock at once: a hold granted while another's
    lease still ran (each hold trimmed to what its client could rely on)."""
    anomalies: list[Anomaly] = []
    open_holds: list[Any] = []
    for hold in table.itertuples(index=False):
        open_holds = [h for h in open_holds if h.end > hold.start]
        for other in open_holds[:1]:
            anomalies.append(
                {
                    "index": hold.index,
                    "other_index": other.index,
                    "keys": [other.key, hold.key],
                    "overlap_ns": int(min(other.end, hold.end) - hold.start),
                    "summary": f"the lock granted at row {hold.index} ({hold.key}) while the hold granted at row "
                    f"{other.index} ({other.key}) had {(min(other.end, hold.end) - hold.start) / 1e6:.1f} ms "
                    "of its lease still to run",
                }
            )
        open_holds.append(hold)
        if len(anomalies) >= LIMIT:
            break
    return anomalies


@case(NAME, "same-place-adds")
def same_place_adds(adds: pd.DataFrame) -> list[Anomaly]:
    """Two acknowledged adds read the guarded list at the same length: each
    overwrote the other, so two critical sections overlapped."""
    twice = adds[adds.duplicated("offset_done", keep=False)].sort_values(["offset_done", "index"])
    return [
        {
            "offset": int(offset),
            "indices": group["index_done"].astype(int).tolist(),
            "values": group["value"].tolist(),
            "summary": f"adds {', '.join(group['value'])} (rows {', '.join(map(str, group['index_done'].astype(int)))}) "
            f"each read the guarded list at length {int(offset)}: each overwrote the other",
        }
        for offset, group in list(twice.groupby("offset_done"))[:LIMIT]
    ]


@case(NAME, "lost-guarded-add", final_copies=True)
def lost_guarded_adds(adds: pd.DataFrame, lists: pd.DataFrame) -> list[Anomaly]:
    """An acknowledged add is missing from a member's final guarded list: a
    write by another holder replaced it.

    `lists`: the members' final copies of the guarded lists."""
    nodes = sorted(lists["node"].unique())
    held = lists.groupby("node")["value"].agg(set)
    found: list[Anomaly] = []
    for add in adds.itertuples(index=False):
        missing = [node for node in nodes if add.value not in held[node]]
        if missing:
            found.append(
                {
                    "index": int(add.index_done),
                    "value": add.value,
                    "nodes": missing,
                    "summary": f"add {add.value}, acknowledged at row {int(add.index_done)}, is not in the guarded list "
                    f"on {', '.join(missing)}: a write by another holder replaced it",
                }
            )
            if len(found) >= LIMIT:
                break
    return found


def mutual_exclusion(history: pd.DataFrame, final: pd.DataFrame) -> dict[str, Any]:
    """The checker: its cases above, over the lock workload's operations."""
    ops = operations(history)
    table, late = holds(ops)
    adds = ops[(ops["f"] == "add") & (ops["type_done"] == "ok")].dropna(subset=["offset_done"])
    keys = set(history.loc[(history["f"] == "add") & (history["process"] >= 0), "key"].dropna())
    lists = final[final["key"].isin(keys)]
    nodes = len(lists["node"].unique())
    anomalies = overlapping_holds(table) + same_place_adds(adds) + lost_guarded_adds(adds, lists)
    stats = {"acquired": len(table) + late, "late_grants": late, "acknowledged_adds": len(adds), "nodes": nodes}
    verdict = result(anomalies, stats)
    if not anomalies and len(adds) and not nodes:
        verdict.update(valid="unknown", error="no final guarded list was read, so acknowledged adds cannot be checked")
    return verdict


def _locks(t: Tables) -> bool:
    return bool(t.client_fs & LOCK_FS)


def _judged(t: Tables) -> Result:
    return mutual_exclusion(t.history, t.final)


CHECKER = Rule(NAME, _locks, _judged)
