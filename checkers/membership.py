"""`membership`: voter changes made safely (KIP-853, KIP-1186).

From the nodes' event logs:
- never two uncommitted voter changes at once: each node announces its voter
  set in force with its high watermark and state whenever it changes; a
  leader that appends a voters record while the one before it is above its
  high watermark took it before its predecessor committed (a follower may
  receive both before it learns the high watermark: not judged);
- AddRaftVoter answered under AckWhenCommitted=true only once committed;
- a wiped node never votes under its old identity: a vote (or pre-vote)
  granted by a replica whose directory id is not the one the candidate's
  voter set names for it.
From the history and the final logs: every voter change acknowledged to the
operator is in every node's committed log at the offset it was given.
"""

from __future__ import annotations

import json

import pandas as pd

from .result import result
from .schema import nemesis_done

CHANGES = ("add-voter", "remove-voter")


def membership(history: pd.DataFrame, events: pd.DataFrame, final: pd.DataFrame) -> dict:
    logged = events[events["source"] == "log"]
    anomalies = _overlapping_changes(logged) + _early_answers(logged) + _old_identity_votes(logged)
    anomalies += _lost_changes(history, final)
    stats = {
        "voter_sets": int((logged["event"] == "voters").sum()),
        "answered_changes": int((logged["event"] == "voter-change-answered").sum()),
        "operator_changes": int(nemesis_done(history)["f"].isin(CHANGES).sum()),
    }
    return result(anomalies, stats)


def _overlapping_changes(logged: pd.DataFrame) -> list[dict]:
    voters = logged[logged["event"] == "voters"].dropna(subset=["offset", "hwm"])
    ordered = voters.sort_values("time_ns", kind="stable")
    found = []
    for (node, _generation), group in ordered.groupby(["node", "generation"], sort=False, dropna=False):
        previous = group["offset"].shift()
        taken = group["state"].fillna("leader") == "leader"
        overlapping = group[taken & (group["offset"] > previous) & (group["hwm"] <= previous)]
        for idx, row in overlapping.iterrows():
            found.append(
                {
                    "kind": "two-uncommitted-voter-changes",
                    "node": node,
                    "time_ns": int(row["time_ns"]),
                    "offset": int(row["offset"]),
                    "previous_offset": int(previous[idx]),
                    "hwm": int(row["hwm"]),
                    "summary": f"{node} took the voter change at offset {row['offset']} while the one at offset"
                    f" {int(previous[idx])} was uncommitted (high watermark {row['hwm']})",
                }
            )
    return found[:20]


def _early_answers(logged: pd.DataFrame) -> list[dict]:
    answers = logged[(logged["event"] == "voter-change-answered") & logged["ack_when_committed"].fillna(False)]
    early = answers[answers["offset"] >= answers["hwm"]]
    return [
        {
            "kind": "voter-change-acknowledged-before-commit",
            "node": row.node,
            "time_ns": int(row.time_ns),
            "offset": int(row.offset),
            "hwm": int(row.hwm),
            "summary": f"{row.node} answered AckWhenCommitted=true for the voter change at offset {row.offset}"
            f" with its high watermark at {row.hwm}",
        }
        for row in early.head(20).itertuples(index=False)
    ]


def _old_identity_votes(logged: pd.DataFrame) -> list[dict]:
    votes = logged[logged["event"].isin(["vote", "prevote"])].dropna(subset=["as_directory", "directory_id"])
    wrong = votes[votes["as_directory"] != votes["directory_id"]]
    return _old_identity_candidacies(logged) + [
        {
            "kind": "vote-under-old-identity",
            "node": row.node,
            "time_ns": int(row.time_ns),
            "epoch": int(row.epoch),
            "candidate": row.candidate,
            "summary": f"{row.node} (directory {row.directory_id[:8]}) granted a {row.event} to {row.candidate}"
            f" in epoch {row.epoch} as the voter with directory {row.as_directory[:8]}",
        }
        for row in wrong.head(20).itertuples(index=False)
    ]


def _old_identity_candidacies(logged: pd.DataFrame) -> list[dict]:
    """A candidate votes for itself: it must be a voter under its own
    directory id in the voter set in force at it (its latest `voters` event)."""
    candidacies = logged[(logged["event"] == "transition") & (logged["state"] == "candidate")]
    sets = logged[logged["event"] == "voters"].dropna(subset=["voters"])
    if candidacies.empty or sets.empty:
        return []
    # A node's life: its generation (-1 where a table has none, as the simulator's).
    life = {"time_ns": "int64", "generation": "int64"}
    table = pd.merge_asof(
        candidacies[["time_ns", "node", "generation", "epoch", "directory_id"]].fillna({"generation": -1}).astype(life),
        sets[["time_ns", "node", "generation", "voters"]].fillna({"generation": -1}).astype(life),
        on="time_ns",
        by=["node", "generation"],
        direction="backward",
    ).dropna(subset=["voters", "directory_id"])
    found = []
    for row in table.itertuples(index=False):
        listed = dict(map(tuple, json.loads(row.voters))).get(row.node, "absent")
        if listed is not None and listed != row.directory_id:
            found.append(
                {
                    "kind": "vote-under-old-identity",
                    "node": row.node,
                    "time_ns": int(row.time_ns),
                    "epoch": int(row.epoch),
                    "candidate": row.node,
                    "summary": f"{row.node} (directory {row.directory_id[:8]}) stood for epoch {row.epoch} and voted"
                    f" for itself, but its voter set names it "
                    + ("not at all" if listed == "absent" else f"with directory {listed[:8]}"),
                }
            )
    return found[:20]


def _lost_changes(history: pd.DataFrame, final: pd.DataFrame) -> list[dict]:
    acked = nemesis_done(history)
    acked = acked[acked["f"].isin(CHANGES)]
    acked = acked.dropna(subset=["offset"])
    records = final.dropna(subset=["offset"]).set_index(["node", "offset"])["value"]
    found = []
    for row in acked.itertuples(index=False):
        change = json.loads(row.value)
        wanted = [row.f.split("-")[0], change["node"], change.get("directory_id")]
        for node in final["node"].unique():
            record = records.get((node, row.offset))
            data = json.loads(record) if isinstance(record, str) and record.startswith("{") else {}
            if data.get("change") != wanted:
                found.append(
                    {
                        "kind": "lost-voter-change",
                        "node": node,
                        "index": int(row.index),
                        "offset": int(row.offset),
                        "summary": f"{row.f} {change['node']} acknowledged at offset {row.offset} (row {row.index})"
                        f" but {node} has {record or 'nothing'} there",
                    }
                )
    return found[:20]
