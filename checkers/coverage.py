"""What a run's faults tried: each fault confirmed in the history becomes a
cell of (fault kind, the role of what it hit, what else was going on), so a
user sees which cells a campaign never reached, and a guided nemesis can aim
for them.

- The role comes from the nodes' own states at the fault's moment (the
  events table: status polls and log transitions): `leader`, `follower`,
  `candidate` (also Pre-Vote's prospective or pre-candidate), `other`
  (unattached, resigned, an observer, a node down). A partition is named
  for what it does to the leader (`leader-cut-off`, `leader-mute`) or, if
  the leader keeps its majority, to the followers it cuts
  (`follower-deaf`, `leader-deaf`, `follower-orphaned`,
  `followers-cut-off`); faults on
  every link are `links`.
- What else was going on: the kinds of the other faults in force, and
  `election` while some node was a candidate. Nothing of that is `alone`.

Pure: a function of the history and events tables.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

import pandas as pd

from history.faults import BY_NAME, COUNTED, ON_MESSAGES, PARTITION
from history.schema import columns, named_nodes, nemesis_done

from .availability import fault_windows
from .latest import Latest

CANDIDATE_STATES = {"candidate", "prospective", "pre-candidate", "precandidate"}
# The roles a partition is named for (`_partition_role`), as a report lists them.
PARTITION_ROLES = (
    "leader-cut-off",
    "leader-mute",
    "follower-deaf",
    "leader-deaf",
    "follower-orphaned",
    "followers-cut-off",
)


def role_of(state: object) -> str:
    if state == "leader":
        return "leader"
    if state == "follower":
        return "follower"
    if state in CANDIDATE_STATES:
        return "candidate"
    return "other"


def node_states(events: pd.DataFrame) -> Latest:
    """Each node's last known state (status polls and transitions) at any moment."""
    known = events.loc[events["state"].notna() & events["node"].notna(), ["time_ns", "node", "state"]]
    return Latest(known, known["state"].tolist())


def _partition_role(links: list[Any], states: dict[str, str]) -> str:
    """Where the cut links leave the leader (`leader-cut-off`: it can neither
    reach nor hear a majority, itself counted; `leader-mute`: it hears a
    majority that cannot hear it) or, if it keeps a majority both ways, its
    followers: `follower-deaf` when those it cannot reach still reach it (a
    follower's fetches arrive, their answers are lost), `leader-deaf` when
    it still reaches those that cannot reach it (their fetches are lost;
    their vote requests too, so one may be elected unheard by it),
    `follower-orphaned` when one cut from the leader still reaches another
    node, else `followers-cut-off`."""
    leaders = [node for node, state in states.items() if state == "leader"]
    nodes = set(states)
    if not leaders or not nodes:
        return "other"
    leader = leaders[0]
    cut = {tuple(link) for link in links if isinstance(link, list) and len(link) == 2}
    heard_by = {leader} | {node for node in nodes if (leader, node) not in cut}
    hears = {leader} | {node for node in nodes if (node, leader) not in cut}
    if len(heard_by & hears) * 2 > len(nodes):
        lost = nodes - (heard_by & hears)
        if lost and lost <= hears:
            return "follower-deaf"
        if lost and lost <= heard_by:
            return "leader-deaf"
        orphaned = any((node, other) not in cut for node in lost for other in nodes - {node, leader})
        return "follower-orphaned" if orphaned else "followers-cut-off"
    return "leader-mute" if len(hears) * 2 > len(nodes) else "leader-cut-off"


def cell(fault: str, touched: list[Any], states: dict[str, str], in_force: list[str]) -> dict[str, Any]:
    """The coverage cell of one fault at its moment."""
    if fault == PARTITION:
        role = _partition_role(touched, states)
    elif fault in ON_MESSAGES:  # the kinds of message it acted on: message-kind x fault cells
        role = "+".join(sorted({str(t.get("kind")) for t in touched if isinstance(t, dict)})) or "other"
    elif fault in BY_NAME and BY_NAME[fault].hits == "link" and not all(isinstance(t, str) for t in touched):
        role = "links"  # links touched, not nodes (a brief cut names the node it cut off)
    else:
        hit = {node for node in touched if isinstance(node, str)}
        roles = {role_of(states.get(node)) for node in hit}
        role = next((r for r in ("leader", "candidate", "follower", "other") if r in roles), "other")
        if len(hit) > 1 and len(hit) * 2 > len(states):  # many nodes at one instant (a power loss)
            role = "all" if hit >= set(states) else "majority"
    return {"fault": fault, "role": role, "with": context(in_force, states)}


def context(in_force: Iterable[str], states: dict[str, str]) -> str:
    """What else was going on: the other faults' kinds, and `election` while a node was a candidate."""
    going_on = sorted(set(in_force))
    if any(role_of(state) == "candidate" for state in states.values()):
        going_on.append("election")
    return "+".join(going_on) or "alone"


def coverage(history: pd.DataFrame, events: pd.DataFrame) -> dict[str, Any]:
    """The cells this run's faults hit, with how often, sorted; `hit` counts
    them and `faults` the faults made (a fault that touched no node or link is none)."""
    nemesis = nemesis_done(history)
    nemesis = nemesis[nemesis["f"].isin(COUNTED)]
    windows = fault_windows(history)
    found = []
    spans = list(columns(windows, "f", "start_ns", "end_ns"))
    states = node_states(events)
    for f, t, node in columns(nemesis, "f", "time_ns", "node"):
        touched = named_nodes(node)
        if not touched:  # confirmed, but it touched nothing (a partition that cut no link): no fault was made
            continue
        others = [other for other, start, end in spans if start < t < end and other != f]
        found.append({**cell(str(f), touched, states.at(t - 1), others), "count": 1})
    cells = add_up([found])
    return {"cells": cells, "hit": len(cells), "faults": len(found)}


def add_up(cell_lists: Iterable[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Cells of many runs (or faults) as one list, counts added, sorted."""
    counts: Counter[Any] = Counter()
    for cells in cell_lists:
        for c in cells:
            counts[(c["fault"], c["role"], c["with"])] += c["count"]
    return [{"fault": f, "role": r, "with": w, "count": n} for (f, r, w), n in sorted(counts.items())]


def unseen_chance(runs: Iterable[list[dict[str, Any]]]) -> float | None:
    """Good–Turing's estimate of the chance that the next run hits a cell no
    run has hit yet. The runs are the draws, and a run's cells (each once,
    however often it hit them) what it drew; the cells hit by exactly one
    run stand for those not hit yet: Q1 / T, the expected number of new
    cells the next run hits (Chao's incidence form), which bounds the
    chance that it hits one; at most 1. None before any run."""
    seen: Counter[Any] = Counter()
    count = 0
    for cells in runs:
        count += 1
        seen.update({(c["fault"], c["role"], c["with"]) for c in cells})
    if not count:
        return None
    once = sum(1 for runs_hit in seen.values() if runs_hit == 1)
    return min(1.0, once / count)
