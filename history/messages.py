"""The kinds of peer message a target's framing names (`Capabilities.framing`):
one vocabulary for every target, so that a message fault, its history row
and its coverage cell read the same on kraft, etcd and NATS.

A target maps its own message types onto these; one it cannot place is
`other`. Pull-based replication (KRaft's fetch) and push-based (Raft's
append) keep their own names, since what a lost one does differs: a lost
fetch leaves a follower asking again, a lost append leaves a leader
sending again.
"""

from __future__ import annotations

KINDS = (
    "vote-request",
    "vote-answer",
    "append",
    "append-answer",
    "fetch",
    "fetch-answer",
    "heartbeat",
    "heartbeat-answer",
    "read-index",
    "read-index-answer",
    "leader-notice",
    "membership",
    "other",
)
# A fault aimed at no kind in particular: the next message of any kind.
ANY = "any"
# The kinds in flight while a node stands for election (or has just won it):
# the moment a leader's loss opens.
IN_ELECTION = frozenset({"vote-request", "vote-answer", "leader-notice"})
# Kinds no search aims at: a voter change's own (made only where membership
# faults are named), and what a framing could not place.
UNAIMED = frozenset({"membership", "other"})
# Moments a message fault may wait for, as the messages show them: each
# opens when a message of one of its first kinds passes and closes when one
# of its second passes. Generic Raft moments, not any bug's recipe:
# - a vote in flight: asked for and not yet answered;
# - newly elected: from a vote given until the first replication is
#   answered or asked for (push: an append's answer; pull: a fetch), so the
#   new leader's first message and its first commit fall in it;
# - a read index in flight: a follower's linearizable read asked of the
#   leader and not yet answered.
MOMENTS = {
    "vote-in-flight": (("vote-request",), ("vote-answer",)),
    "newly-elected": (("vote-answer",), ("append-answer", "fetch")),
    "read-index-in-flight": (("read-index",), ("read-index-answer",)),
}
