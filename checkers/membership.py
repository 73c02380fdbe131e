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
from typing import Any

import numpy as np
import pandas as pd

from history.schema import columns, nemesis_done

from .cases import Anomaly, case
from .checker import Result, Rule, Tables
from .result import result

NAME = "membership"
CHANGES = ("add-voter", "remove-voter")


def membership(history: pd.DataFrame, events: pd.DataFrame, final: pd.DataFrame) -> dict[str, Any]:
    logged = events[events["source"] == "log"]
    anomalies = overlapping_changes(logged) + early_answers(logged) + old_identity_votes(logged)
    anomalies += lost_changes(history, final)
    stats = {
        "voter_sets": int((logged["event"] == "voters").sum()),
        "answered_changes": int((logged["event"] == "voter-change-answered").sum()),
        "operator_changes": int(nemesis_done(history)["f"].isin(CHANGES).sum()),
    }
    return result(anomalies, stats)


@case(NAME, "two-uncommitted-voter-changes")
def overlapping_changes(logged: pd.DataFrame) -> list[Anomaly]:
    """A leader took a voter change while the one before it was uncommitted
    (its high watermark not past the earlier change's offset), within one
    life of the node.

    On arrays: rows sorted by life (its generation, in order of first
    appearance), each compared with the one before."""
    voters = logged.loc[logged["event"] == "voters", ["time_ns", "node", "generation", "state", "offset", "hwm"]]
    ordered = voters.dropna(subset=["offset", "hwm"]).sort_values("time_ns", kind="stable")
    life = ordered.groupby(["node", "generation"], sort=False, dropna=False).ngroup().to_numpy()
    by_life = np.argsort(life, kind="stable")
    offset, hwm = ordered["offset"].to_numpy(dtype="int64")[by_life], ordered["hwm"].to_numpy(dtype="int64")[by_life]
    taken = (ordered["state"].fillna("leader") == "leader").to_numpy(dtype=bool)[by_life]
    overlapping = np.zeros(len(by_life), dtype=bool)
    overlapping[1:] = (
        (life[by_life][1:] == life[by_life][:-1]) & taken[1:] & (offset[1:] > offset[:-1]) & (hwm[1:] <= offset[:-1])
    )
    nodes, times = ordered["node"].to_numpy(dtype=object)[by_life], ordered["time_ns"].to_numpy(dtype="int64")[by_life]
    return [
        {
            "node": nodes[k],
            "time_ns": int(times[k]),
            "offset": int(offset[k]),
            "previous_offset": int(offset[k - 1]),
            "hwm": int(hwm[k]),
            "summary": f"{nodes[k]} took the voter change at offset {offset[k]} while the one at offset"
            f" {offset[k - 1]} was uncommitted (high watermark {hwm[k]})",
        }
        for k in np.flatnonzero(overlapping)[:20]
    ]


@case(NAME, "voter-change-acknowledged-before-commit")
def early_answers(logged: pd.DataFrame) -> list[Anomaly]:
    """A node answered AddRaftVoter with AckWhenCommitted=true before the
    voter change was committed (its offset not below the high watermark)."""
    answered = (logged["event"] == "voter-change-answered") & logged["ack_when_committed"].fillna(False)
    answers = logged.loc[answered, ["node", "time_ns", "offset", "hwm"]]
    early = answers[answers["offset"] >= answers["hwm"]]
    return [
        {
            "node": node,
            "time_ns": int(time_ns),
            "offset": int(offset),
            "hwm": int(hwm),
            "summary": f"{node} answered AckWhenCommitted=true for the voter change at offset {offset}"
            f" with its high watermark at {hwm}",
        }
        for node, time_ns, offset, hwm in columns(early.head(20), "node", "time_ns", "offset", "hwm")
    ]


@case(NAME, "vote-under-old-identity")
def old_identity_votes(logged: pd.DataFrame) -> list[Anomaly]:
    """A wiped node voted under its old identity: a vote, a pre-vote, or a
    candidate's vote for itself, by a replica whose directory id is not the
    one the voter set names for it."""
    fields = ["node", "time_ns", "epoch", "candidate", "directory_id", "event", "as_directory"]
    votes = logged.loc[logged["event"].isin(["vote", "prevote"]), fields].dropna(
        subset=["as_directory", "directory_id"]
    )
    wrong = votes[votes["as_directory"] != votes["directory_id"]]
    return _old_identity_candidacies(logged) + [
        {
            "node": node,
            "time_ns": int(time_ns),
            "epoch": int(epoch),
            "candidate": candidate,
            "summary": f"{node} (directory {directory[:8]}) granted a {event} to {candidate}"
            f" in epoch {epoch} as the voter with directory {as_directory[:8]}",
        }
        for node, time_ns, epoch, candidate, directory, event, as_directory in columns(wrong.head(20), *fields)
    ]


def _old_identity_candidacies(logged: pd.DataFrame) -> list[dict[str, Any]]:
    """A candidate votes for itself: it must be a voter under its own
    directory id in the voter set in force at it (its latest `voters` event)."""
    candidacies = logged.loc[
        (logged["event"] == "transition") & (logged["state"] == "candidate"),
        ["time_ns", "node", "generation", "epoch", "directory_id"],
    ]
    sets = logged.loc[logged["event"] == "voters", ["time_ns", "node", "generation", "voters"]].dropna(
        subset=["voters"]
    )
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
    for node, time_ns, epoch, directory, voters in columns(table, "node", "time_ns", "epoch", "directory_id", "voters"):
        listed = dict(map(tuple, json.loads(voters))).get(node, "absent")
        if listed is not None and listed != directory:
            found.append(
                {
                    "node": node,
                    "time_ns": int(time_ns),
                    "epoch": int(epoch),
                    "candidate": node,
                    "summary": f"{node} (directory {directory[:8]}) stood for epoch {epoch} and voted"
                    f" for itself, but its voter set names it "
                    + ("not at all" if listed == "absent" else f"with directory {listed[:8]}"),
                }
            )
    return found[:20]


@case(NAME, "lost-voter-change", final_copies=True)
def lost_changes(history: pd.DataFrame, final: pd.DataFrame) -> list[Anomaly]:
    """A voter change acknowledged to the operator is not in some node's
    final log at the offset it was given."""
    acked = nemesis_done(history)
    acked = acked[acked["f"].isin(CHANGES)]
    acked = acked.dropna(subset=["offset"])
    if acked.empty:
        return []
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
                        "node": node,
                        "index": int(row.index),
                        "offset": int(row.offset),
                        "summary": f"{row.f} {change['node']} acknowledged at offset {row.offset} (row {row.index})"
                        f" but {node} has {record or 'nothing'} there",
                    }
                )
    return found[:20]


def _membership_changed(t: Tables) -> bool:
    return bool((t.events["event"] == "voters").any() or t.history["f"].isin(CHANGES).any())


def _judged(t: Tables) -> Result:
    return membership(t.history, t.events, t.final)


CHECKER = Rule(NAME, _membership_changed, _judged, so_far=_judged)
