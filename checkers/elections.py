"""Election checkers over the `events` table: `election-safety` and
`single-leader-per-epoch` (with client replies from `history` as claims too)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from history.schema import columns

from .cases import Anomaly, case
from .checker import Result, Rule, Tables, always
from .latest import Latest
from .result import result

ELECTION_SAFETY = "election-safety"
SINGLE_LEADER = "single-leader-per-epoch"
# Events that say which voter set a node has in force: the reference
# quorum's `voters`, etcd's `configuration` (its membership is not the
# reference quorum's, so the membership checker reads only `voters`).
VOTER_SETS = ("voters", "configuration")


def election_safety(events: pd.DataFrame, capabilities: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """No voter grants standard votes to two candidates in one epoch (across
    generations; a candidate's vote for itself counts), nor, where the target
    declares `transitions_name_vote`, loses its vote within the epoch (a
    restart that forgot it could vote again); no node's epoch goes
    backwards in its own event log or across status polls (within one data
    directory); every leader held votes from a majority of its voter set; no
    follower that has fetched from its leader grants a pre-vote (KIP-996)."""
    fields = ["time_ns", "node", "epoch", "candidate", "directory_id"]
    votes = events.loc[events["event"] == "vote", fields]
    own = events.loc[
        (events["event"] == "transition") & (events["state"] == "candidate"),
        ["time_ns", "node", "epoch", "directory_id"],
    ]
    own = own.assign(candidate=own["node"])[fields]
    cast = _concat([votes, own]).dropna(subset=["epoch", "candidate"])
    anomalies = double_votes(cast)
    anomalies += epochs_gone_back(events)
    anomalies += leaders_without_majority(events, votes)
    anomalies += prevotes_while_following(events)
    if (capabilities or {}).get("transitions_name_vote"):
        anomalies += votes_forgotten(events, cast)
    return result(anomalies, {"votes": len(votes), "candidacies": len(own)})


@case(ELECTION_SAFETY, "double-vote")
def double_votes(cast: pd.DataFrame) -> list[Anomaly]:
    """A node granted its vote to two candidates in one epoch (a candidate's
    vote for itself counts), across its restarts.

    `cast`: the votes granted and the candidacies, by node, epoch and candidate."""
    ballots = cast.drop_duplicates(["node", "epoch", "candidate"])
    split = ballots.groupby(["node", "epoch"])["candidate"].nunique()
    found = []
    for (node, epoch), _ in split[split > 1].items():
        granted = ballots[(ballots["node"] == node) & (ballots["epoch"] == epoch)].sort_values("time_ns")
        found.append(
            {
                "node": node,
                "epoch": int(epoch),
                "candidates": granted["candidate"].tolist(),
                "times_ns": [int(t) for t in granted["time_ns"]],
                "summary": f"{node} voted for {' and '.join(granted['candidate'])} in epoch {epoch}",
            }
        )
    return found


def _last_named(codes: np.ndarray, order: np.ndarray, sources: np.ndarray, nodes: np.ndarray) -> np.ndarray:
    """Each row's directory id code, or where it has none (-1) the last one
    before it, in `order`, from the same source and node (-1 if none yet)."""
    ordered = codes[order]
    starts = np.r_[True, (sources[order][1:] != sources[order][:-1]) | (nodes[order][1:] != nodes[order][:-1])]
    last = np.maximum.accumulate(np.where((ordered >= 0) | starts, np.arange(len(order)), 0))
    filled = np.empty_like(codes)
    filled[order] = ordered[last]
    return filled


@case(ELECTION_SAFETY, "epoch-went-back")
def epochs_gone_back(events: pd.DataFrame) -> list[Anomaly]:
    """A node's epoch went back: below one it had reached before, in its
    own log or across status polls, within one data directory.

    Within one source (the node's log, or the status polls) and one
    replica, in time order, no epoch below the one before it. A wiped disk
    starts again from epoch 0 under a new directory id: epochs are compared
    within one (node, directory id), and a row that names no directory id
    (a commit, a refusal) belongs to the last one its node's source named
    before it. Sorted on integer codes (a sort on the node names cost most
    of the checker)."""
    known = events.loc[
        events["epoch"].notna() & events["source"].notna() & events["node"].notna(),
        ["time_ns", "node", "epoch", "source", "directory_id"],
    ]
    sources, source_names = pd.factorize(known["source"], sort=True)
    nodes, _ = pd.factorize(known["node"], sort=True)
    times, epochs = known["time_ns"].to_numpy(dtype="int64"), known["epoch"].to_numpy(dtype="int64")
    replicas = _last_named(
        pd.factorize(known["directory_id"])[0],
        np.lexsort((np.arange(len(known)), times, nodes, sources)),
        sources,
        nodes,
    )
    order = np.lexsort((np.arange(len(known)), times, replicas, nodes, sources))
    same = (
        (sources[order][1:] == sources[order][:-1])
        & (nodes[order][1:] == nodes[order][:-1])
        & (replicas[order][1:] == replicas[order][:-1])
    )
    back = np.flatnonzero(same & (epochs[order][1:] < epochs[order][:-1])) + 1
    found = sorted((sources[order[b]], nodes[order[b]], times[order[b]], order[b], epochs[order[b - 1]]) for b in back)
    return [
        {
            "node": known["node"].iat[at],
            "time_ns": int(time),
            "epoch": int(epochs[at]),
            "previous": int(previous),
            "summary": f"{known['node'].iat[at]} epoch went back from {previous} to {epochs[at]} ({source_names[source]})",
        }
        for source, _, time, at, previous in found
    ]


@case(ELECTION_SAFETY, "vote-forgotten")
def votes_forgotten(events: pd.DataFrame, ballots: pd.DataFrame) -> list[Anomaly]:
    """A node that voted in an epoch later said it held no vote in that
    epoch: it forgot its vote (say, at a restart), and may vote again.

    Raft keeps a vote on disk before it answers: a replica (a node's data
    directory) that voted in an epoch (`ballots`: votes and candidacies)
    names that vote in every later transition of the epoch. Judged only for
    a target that declares `transitions_name_vote`."""
    replica = ["node", "replica", "epoch"]
    first = (
        ballots.assign(replica=ballots["directory_id"].fillna(""))
        .sort_values("time_ns", kind="stable")
        .drop_duplicates(replica)[[*replica, "time_ns", "candidate"]]
        .rename(columns={"time_ns": "voted_ns"})
    )
    unvoted = (events["event"] == "transition") & (events["source"] == "log") & events["voted_for"].isna()
    moves = events.loc[unvoted, ["node", "directory_id", "epoch", "time_ns", "state"]]
    moves = moves.assign(replica=moves["directory_id"].fillna(""))[[*replica, "time_ns", "state"]]
    lost = moves.merge(first, on=replica)
    lost = lost[lost["time_ns"] > lost["voted_ns"]].sort_values("time_ns", kind="stable").drop_duplicates(replica)
    fields = ["node", "epoch", "candidate", "voted_ns", "time_ns", "state"]
    return [
        {
            "node": node,
            "epoch": int(epoch),
            "candidate": candidate,
            "times_ns": [int(voted_ns), int(time_ns)],
            "summary": f"{node} voted for {candidate} in epoch {epoch}, then was {state} in epoch "
            f"{epoch} with no vote: a vote lost (say, at a restart) lets a node vote twice",
        }
        for node, epoch, candidate, voted_ns, time_ns, state in columns(lost.head(20), *fields)
    ]


@case(ELECTION_SAFETY, "prevote-while-following")
def prevotes_while_following(events: pd.DataFrame) -> list[Anomaly]:
    """A follower that had fetched from its leader granted a pre-vote,
    against KIP-996's Pre-Vote rule.

    Read from `prevote` (grant) events that name the leader the granter had
    fetched from (targets whose events say so)."""
    granted = events.loc[events["event"] == "prevote", ["node", "time_ns", "epoch", "candidate", "leader"]].dropna(
        subset=["leader"]
    )
    return [
        {
            "node": node,
            "time_ns": int(time_ns),
            "epoch": int(epoch),
            "candidate": candidate,
            "leader": leader,
            "summary": f"{node} granted {candidate} a pre-vote in epoch {epoch} while following {leader}, "
            "whose log it had fetched",
        }
        for node, time_ns, epoch, candidate, leader in columns(granted.head(20), *granted.columns)
    ]


@case(ELECTION_SAFETY, "leader-without-majority")
def leaders_without_majority(events: pd.DataFrame, votes: pd.DataFrame) -> list[Anomaly]:
    """A node led an epoch with fewer granted votes (its own included) than
    a majority of the voter set in force at it when it was elected.

    Judged in epochs in which vote events exist; the voter set is the
    leader's latest `voters` event, and a node that never logged one is
    judged against all the nodes that logged anything."""
    leaders = events.loc[
        (events["event"] == "transition") & (events["state"] == "leader"), ["time_ns", "node", "epoch"]
    ]
    leaders = leaders.drop_duplicates(["node", "epoch"])
    leaders = leaders[leaders["epoch"].isin(votes["epoch"])]
    if leaders.empty:
        return []
    leaders = _with_majority(leaders, events)
    granted = votes.groupby(["epoch", "candidate"])["node"].nunique().rename("granted").reset_index()
    table = leaders.merge(granted, left_on=["epoch", "node"], right_on=["epoch", "candidate"], how="left")
    table["granted"] = table["granted"].fillna(0).astype("int64") + 1
    short = table[table["granted"] < table["majority"]]
    return [
        {
            "node": node,
            "epoch": int(epoch),
            "time_ns": int(time_ns),
            "votes": int(granted),
            "summary": f"{node} led epoch {epoch} with {granted} of the {majority} votes it needed",
        }
        for node, epoch, time_ns, granted, majority in columns(short, "node", "epoch", "time_ns", "granted", "majority")
    ]


def _with_majority(leaders: pd.DataFrame, events: pd.DataFrame) -> pd.DataFrame:
    """The leaders in time order, each with the majority of the voter set in
    force at it then (its latest `voters` event at or before; all the nodes
    that logged anything where it logged none), looked up in `Latest`."""
    everyone = events["node"].dropna().nunique() // 2 + 1
    sets = events.loc[events["event"].isin(VOTER_SETS) & (events["source"] == "log"), ["time_ns", "node", "voters"]]
    sets = sets.dropna(subset=["voters"])
    if sets.empty:
        return leaders.assign(majority=everyone)
    in_force = Latest(sets, [len(json.loads(voters)) // 2 + 1 for voters in sets["voters"]])
    leaders = leaders.sort_values("time_ns")
    majority = [in_force.of(node, time_ns, everyone) for node, time_ns in columns(leaders, "node", "time_ns")]
    return leaders.assign(majority=np.array(majority, dtype="int64"))


def single_leader_per_epoch(
    events: pd.DataFrame, history: pd.DataFrame, capabilities: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """Every claim about who leads epoch e names the same node: nodes saying
    they lead, nodes naming a leader (in events, and in any reply to a client,
    a refusal included: "not leader; the leader of epoch 4 is n2"), and, where
    the target declares `ok_proves_leadership`, clients answered `ok` by a
    node (a node acknowledges only what it appended as that epoch's leader;
    a target whose followers answer for the leader declares otherwise).

    Decided on integer codes, (epoch, claimed node) pairs, with no table of
    claims made: a million replies are a million claims, and gathering them
    into one table cost most of the checker. Only the epochs claimed twice
    have their claims gathered, to name them."""
    claims = _claims(events, history, capabilities)
    names = sorted({name for claim in claims for name in claim.names})
    pairs = np.unique(np.concatenate([claim.pairs(names) for claim in claims]))
    epochs, named = np.unique(pairs // len(names or [""]), return_counts=True)
    anomalies = two_leaders(claims, epochs[named > 1])
    return result(anomalies, {"claims": sum(len(claim.rows) for claim in claims), "epochs": len(epochs)})


@case(SINGLE_LEADER, "two-leaders")
def two_leaders(claims: list[_Claim], epochs: np.ndarray) -> list[Anomaly]:
    """Two nodes were claimed to lead one epoch: by themselves, by a node
    naming its leader, or by a reply to a client.

    `epochs`: those whose claims name more than one node; each is listed
    with the first claim of each node."""
    found = []
    for epoch in epochs:
        table = _concat([claim.in_epoch(epoch) for claim in claims])
        first = table.sort_values("time_ns", kind="stable").drop_duplicates("claimed")
        found.append(
            {
                "epoch": int(epoch),
                "leaders": first["claimed"].tolist(),
                "claims": first[["time_ns", "claimed", "by"]].astype({"time_ns": "int64"}).to_dict("records"),
                "summary": f"epoch {epoch} claimed by {' and '.join(first['claimed'])}",
            }
        )
    return found


class _Claim:
    """One kind of claim: the rows of `table` that make it (epoch and claimed
    node both known) and their epochs, the column naming the node claimed,
    and who claims it (a column, or one name for every row)."""

    def __init__(self, table: pd.DataFrame, rows: np.ndarray, claimed: str, by: str) -> None:
        self.table, self.claimed, self.by = table, claimed, by
        known = table["epoch"].notna().to_numpy() & table[claimed].notna().to_numpy()
        self.rows = np.flatnonzero(rows & known)
        self.epochs = table["epoch"].to_numpy(dtype="int64", na_value=0)[self.rows]
        self.codes, self.names = pd.factorize(table[claimed].take(self.rows))

    def pairs(self, names: list[str]) -> np.ndarray:
        """Each row's (epoch, claimed) as one integer: epoch times the names' count plus the name's place in `names`."""
        place = (
            np.searchsorted(names, np.asarray(self.names, dtype=object)) if len(self.names) else np.zeros(0, "int64")
        )
        coded: np.ndarray = self.epochs * len(names) + place[self.codes].astype("int64")
        return coded

    def in_epoch(self, epoch: int) -> pd.DataFrame:
        rows = self.rows[self.epochs == epoch]
        part = self.table.take(rows)
        by = part[self.by].fillna("client") if self.by in part else self.by
        return pd.DataFrame({"time_ns": part["time_ns"], "claimed": part[self.claimed], "by": by})


def _claims(events: pd.DataFrame, history: pd.DataFrame, capabilities: Mapping[str, Any] | None) -> list[_Claim]:
    everything = np.ones(len(events), dtype=bool)
    claims = [
        _Claim(events, (events["state"] == "leader").to_numpy(dtype=bool, na_value=False), "node", "node"),
        _Claim(events, everything, "leader", "node"),
    ]
    replies = (history["process"] >= 0).to_numpy()
    answered = replies & (history["type"] != "invoke").to_numpy(dtype=bool, na_value=False)
    claims.append(_Claim(history, answered, "leader", "node"))
    if (capabilities or {}).get("ok_proves_leadership", True):
        claims.append(
            _Claim(history, replies & (history["type"] == "ok").to_numpy(dtype=bool, na_value=False), "node", "client")
        )
    return claims


def _concat(frames: list[pd.DataFrame]) -> pd.DataFrame:
    """Concatenate, leaving out empty frames (whose all-NA columns would change the dtypes)."""
    filled = [f for f in frames if len(f)]
    return pd.concat(filled) if filled else frames[0].iloc[0:0]


def _election_safety(t: Tables) -> Result:
    return election_safety(t.events, t.capabilities)


def _single_leader(t: Tables) -> Result:
    return single_leader_per_epoch(t.events, t.history, t.capabilities)


ELECTION_SAFETY_CHECKER = Rule(ELECTION_SAFETY, always, _election_safety, so_far=_election_safety)
SINGLE_LEADER_CHECKER = Rule(SINGLE_LEADER, always, _single_leader, so_far=_single_leader)
