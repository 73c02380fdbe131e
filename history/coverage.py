"""The coverage cells' vocabulary: a fault's cell is (fault kind, the role
of what it hit, what else was going on), from the nodes' own states at the
fault's moment (checkers/coverage.py counts a history's cells; the guided
nemesis and the simulator aim by the same words).

- The role: `leader`, `follower`, `candidate` (also Pre-Vote's prospective
  or pre-candidate), `other` (unattached, resigned, an observer, a node
  down); a fault that hit a majority or all at one instant, `majority` or
  `all`. A partition is named for what it does to the leader
  (`leader-cut-off`, `leader-mute`) or, if the leader keeps its majority,
  to the followers it cuts (`follower-deaf`, `leader-deaf`,
  `follower-orphaned`, `followers-cut-off`); faults on every link are
  `links`; a message fault's, the kinds of message it acted on.
- What else was going on: the kinds of the other faults in force, and
  `election` while some node was a candidate. Nothing of that is `alone`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .faults import BY_NAME, ON_MESSAGES, PARTITION

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


def partition_role(links: list[Any], states: dict[str, str]) -> str:
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
        role = partition_role(touched, states)
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
