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

from .result import result

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


def _overlaps(table: pd.DataFrame) -> list[dict[str, Any]]:
    anomalies: list[dict[str, Any]] = []
    open_holds: list[Any] = []
    for hold in table.itertuples(index=False):
        open_holds = [h for h in open_holds if h.end > hold.start]
        for other in open_holds[:1]:
            anomalies.append(
                {
                    "kind": "overlapping-holds",
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


def mutual_exclusion(history: pd.DataFrame, final: pd.DataFrame) -> dict[str, Any]:
    ops = operations(history)
    table, late = holds(ops)
    anomalies = _overlaps(table)

    adds = ops[(ops["f"] == "add") & (ops["type_done"] == "ok")].dropna(subset=["offset_done"])
    keys = set(history.loc[(history["f"] == "add") & (history["process"] >= 0), "key"].dropna())
    twice = adds[adds.duplicated("offset_done", keep=False)].sort_values(["offset_done", "index"])
    for offset, group in list(twice.groupby("offset_done"))[:LIMIT]:
        anomalies.append(
            {
                "kind": "same-place-adds",
                "offset": int(offset),
                "indices": group["index_done"].astype(int).tolist(),
                "values": group["value"].tolist(),
                "summary": f"adds {', '.join(group['value'])} (rows {', '.join(map(str, group['index_done'].astype(int)))}) "
                f"each read the guarded list at length {int(offset)}: each overwrote the other",
            }
        )

    lists = final[final["key"].isin(keys)]
    nodes = sorted(lists["node"].unique())
    held = lists.groupby("node")["value"].agg(set)
    for add in adds.itertuples(index=False):
        missing = [node for node in nodes if add.value not in held[node]]
        if missing:
            anomalies.append(
                {
                    "kind": "lost-guarded-add",
                    "index": int(add.index_done),
                    "value": add.value,
                    "nodes": missing,
                    "summary": f"add {add.value}, acknowledged at row {int(add.index_done)}, is not in the guarded list "
                    f"on {', '.join(missing)}: a write by another holder replaced it",
                }
            )
            if sum(a["kind"] == "lost-guarded-add" for a in anomalies) >= LIMIT:
                break

    stats = {"acquired": len(table) + late, "late_grants": late, "acknowledged_adds": len(adds), "nodes": len(nodes)}
    verdict = result(anomalies, stats)
    if not anomalies and len(adds) and not nodes:
        verdict.update(valid="unknown", error="no final guarded list was read, so acknowledged adds cannot be checked")
    return verdict
