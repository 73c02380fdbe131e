"""The fault catalogue: every fault the nemesis makes, declared once. The
schedule, the guided nemesis, coverage, availability, the report and a
run's validation all read it, so a new fault is one entry here (and its
making in nemesis/executor.py), not a name in six modules.

It sits beside the history schema, below the checkers, because a fault is
history vocabulary: the `f` of a nemesis row. Two kinds of entry:

- an operation the nemesis makes and records (`partition`, `kill`, a voter
  removal `shrink`): lasting until its `recovery` is made, or instant (over
  once it is made: a bounce, a power loss);
- a recipe that `--nemesis` names and that makes other operations (`churn`:
  slow links, a leader killed, bounces; `membership`: voter changes among
  faults), with `makes` the operation its schedule opens with.

A fault hits nodes or links. `needs` names the target capabilities
(targets/interface.py's `Capabilities`) any one of which it takes, and
`refused` says why a target without them cannot have it; a fault made on
the harness machine (the node's filesystem, its clock's file) is for the
local and Docker backends only.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Fault:
    name: str
    hits: str  # "node" or "link"
    # The operation that ends it; None: instant, or (a recipe) healed by heal-all.
    recovery: str | None
    colour: str
    # Aimed by the guided nemesis (else only drawn by the random strategy).
    guided: bool = True
    # A node it touches stays up and heard (a link fault is judged by the cut in force).
    leaves_nodes_up: bool = False
    needs: tuple[str, ...] = ()
    refused: str = ""
    on_this_machine: bool = False
    # A recipe: the operation its schedule opens with.
    makes: str | None = None
    # Changes the cluster's shape (a lost disk, voters removed): made only when named.
    reshapes: bool = False
    # Made by the nemesis in the course of others, never named by `--nemesis`.
    bookkeeping: bool = False
    # May hit a majority, or every node, at the same instant (a power loss of
    # nodes sharing a feed; processes killed together, as Jepsen's kill
    # nemesis aims at a majority or all: a cluster started again from its
    # disks elects a leader that has yet to learn what was committed),
    # besides one node or a minority.
    at_once: bool = False
    # Among the guided strategy's default faults (where the target takes it).
    by_default: bool = True
    # A link fault that slows or thins the traffic rather than cutting it: every end of its links is touched.
    slows: bool = False
    # Made by a toxic of the link proxies splitbrain starts (or, a recipe, it
    # makes one): not under iptables, nor on links cut per pair.
    by_proxy: bool = False
    # A correct node may stop on it (fail-stop: a full disk, damaged files):
    # the node-crashes checker does not count such a stop.
    may_stop: bool = False
    # May leave a node's files damaged or cut back (a flipped bit, a write a
    # full disk tore): the node may then lack records it acknowledged, which
    # a quorum survives on at most a minority of its voters until they are
    # repaired, so the guided nemesis keeps to that (nemesis/guided.py).
    damages: bool = False

    @property
    def operation(self) -> str:
        """The history's `f` of its first operation."""
        return self.makes or self.name

    @property
    def instant(self) -> bool:
        return self.recovery is None and self.makes is None


LINK_COLOUR, NODE_COLOUR, INSTANT_COLOUR = "#d62f2f", "#333333", "#6a1b9a"
# The faults other rooms name by kind: the run's set-up, validation and end,
# the checkers' windows, the report (behaviour lives in nemesis/faults/).
PARTITION, LATENCY, PAUSE, KILL, CLOCK, START_OBSERVERS = (
    "partition",
    "latency",
    "pause",
    "kill",
    "clock",
    "start-observers",
)
# The faults the reference quorum's simulator makes too (targets/kraft/sim/), by these names.
BOUNCE, WIPE, LOSE_UNFSYNCED, MESSAGE_LOSS = ("bounce", "wipe", "lose-unfsynced", "message-loss")
# What the random strategy draws when `--nemesis` names nothing.
RANDOM_DEFAULT = (PARTITION, KILL, PAUSE)
LAZY = "'s data directory cannot sit on the lose-unfsynced filesystem"
FRAMED = " declares no framing of its peer messages: no message faults"
VOTERS = " takes no voter, member or replica changes: no wipe or membership faults"
CATALOGUE = (
    Fault(PARTITION, "link", "heal", LINK_COLOUR, leaves_nodes_up=True),
    Fault(LATENCY, "link", "heal", "#e08a1e", leaves_nodes_up=True, slows=True, by_proxy=True),
    # Every link's traffic cut to a few kilobytes a second (nemesis/faults/bandwidth.py), until healed.
    Fault("bandwidth", "link", "heal", "#c0ca33", leaves_nodes_up=True, by_default=False, slows=True, by_proxy=True),
    Fault(PAUSE, "node", "resume", "#7b4fa0"),
    Fault(KILL, "node", "start", NODE_COLOUR, at_once=True),
    Fault("bounce", "node", None, INSTANT_COLOUR),
    Fault("restart", "node", None, INSTANT_COLOUR),
    # Faults at the scale of single messages (nemesis/faults/brief.py), sized to the
    # target's election timeout and over when their operation is: a node's
    # links cut both ways for a fraction of a timeout, a few times (a vote or
    # a fetch in flight lost); a node paused for about one timeout and resumed.
    Fault("flicker", "link", None, "#ef6c00"),
    Fault("stall", "node", None, "#9575cd"),
    # Faults on one message on one link (nemesis/faults/messages.py), for a target
    # that declares how its peer traffic splits into messages: the next one
    # of a kind dropped, held while later ones pass, sent twice, or swapped
    # with the one after it; the link's connection stays up.
    *(
        Fault(name, "link", None, "#00838f", leaves_nodes_up=True, needs=("framing",), refused=FRAMED, by_default=False)
        for name in ("message-drop", "message-hold", "message-duplicate", "message-reorder")
    ),
    # Each message on the links dropped at a rate until healed (a simulated
    # schedule's lossy network, replayed): the links thinned, never cut.
    Fault(
        "message-loss",
        "link",
        "heal",
        "#4dd0e1",
        guided=False,
        leaves_nodes_up=True,
        needs=("framing",),
        refused=FRAMED,
        by_default=False,
        slows=True,
    ),
    # A disk lost: the node returns as an observer and is added again under its new directory id.
    Fault(
        "wipe",
        "node",
        "rejoin",
        "#5d4037",
        needs=("voter_changes", "member_changes", "replica_changes"),
        refused=VOTERS,
        reshapes=True,
    ),
    # A power loss: the node killed, its writes not yet fsynced dropped, and started again.
    Fault(
        "lose-unfsynced",
        "node",
        None,
        INSTANT_COLOUR,
        needs=("lazy_disks",),
        refused=LAZY,
        on_this_machine=True,
        at_once=True,
    ),
    # A full disk (writes that add a byte fail with ENOSPC), then room again
    # (and a node that stopped on it started again).
    Fault(
        "disk-full",
        "node",
        "disk-space",
        "#00796b",
        needs=("lazy_disks",),
        refused=LAZY,
        on_this_machine=True,
        may_stop=True,
        damages=True,
    ),
    # One of a stopped node's data files damaged (a bit flipped, or bytes cut
    # off: at its log's tail, anywhere in blocks, snapshots or metadata), and
    # the node started.
    Fault(
        "corrupt",
        "node",
        None,
        INSTANT_COLOUR,
        needs=("data_files",),
        refused=" names no data files that corrupt could damage",
        on_this_machine=True,
        may_stop=True,
        damages=True,
    ),
    # A node's clock moved (jumped, skewed or strobed: nemesis/faults/clock.py), then set right.
    Fault(
        CLOCK,
        "node",
        "clock-reset",
        "#1565c0",
        leaves_nodes_up=True,
        needs=("clock_faults",),
        refused=" takes no clock faults: libfaketime moves only clocks read through libc, and this target's "
        "server reads its own another way (a Go program reads its clock through the vDSO)",
        on_this_machine=True,
    ),
    # Voter changes among faults: a follower's disk lost and the leader killed
    # before it is added again (its vote must not count under the old
    # identity), or one or two followers removed at once; then all rejoin.
    Fault(
        "membership",
        "node",
        "rejoin",
        "#5d4037",
        needs=("voter_changes", "member_changes", "replica_changes"),
        refused=VOTERS,
        makes="shrink",
        reshapes=True,
    ),
    # Elections under stress: slow links, the leader killed, then nodes
    # bounced every few hundred milliseconds until the interval ends.
    Fault("churn", "link", "heal-all", LINK_COLOUR, guided=False, leaves_nodes_up=True, makes="latency", by_proxy=True),
    # Voters removed (membership's own operation), and the changes the nemesis
    # makes in passing: voters (the reference quorum) or members (etcd: a
    # learner added, then promoted) added and removed, observers started.
    Fault("shrink", "node", "rejoin", "#5d4037", bookkeeping=True),
    Fault("add-voter", "node", None, INSTANT_COLOUR, leaves_nodes_up=True, bookkeeping=True),
    Fault("remove-voter", "node", None, INSTANT_COLOUR, bookkeeping=True),
    Fault("add-learner", "node", None, INSTANT_COLOUR, leaves_nodes_up=True, bookkeeping=True),
    Fault("promote", "node", None, INSTANT_COLOUR, leaves_nodes_up=True, bookkeeping=True),
    Fault("remove-member", "node", None, INSTANT_COLOUR, bookkeeping=True),
    # A stream's replica count changed (NATS: scaled down, and back up on `rejoin`).
    Fault("scale-replicas", "node", None, INSTANT_COLOUR, leaves_nodes_up=True, bookkeeping=True),
    Fault(START_OBSERVERS, "node", None, INSTANT_COLOUR, leaves_nodes_up=True, bookkeeping=True),
    # A simulated schedule's node names put on the real nodes (its leader on the real one), for the steps after it.
    Fault("rename", "node", None, INSTANT_COLOUR, leaves_nodes_up=True, bookkeeping=True),
)
BY_NAME = {fault.name: fault for fault in CATALOGUE}
# What undoes every fault in force: a recipe's recovery, a turn's end, and every exit path's.
HEAL_ALL = "heal-all"
# What `--nemesis` names, in the catalogue's order.
KINDS = tuple(fault.name for fault in CATALOGUE if not fault.bookkeeping)
# Faults a correct node may stop on (the node-crashes checker does not count such a stop).
MAY_STOP = frozenset(fault.name for fault in CATALOGUE if fault.may_stop)
# Operations over once made (they open no window in force).
INSTANT = frozenset(fault.name for fault in CATALOGUE if fault.instant)
# Each recovery and the operations it ends (heal-all: every one).
RECOVERIES = {
    **{
        recovery: tuple(f.name for f in CATALOGUE if f.recovery == recovery and not f.makes)
        for recovery in dict.fromkeys(f.recovery for f in CATALOGUE if f.recovery and f.recovery != HEAL_ALL)
    },
    HEAL_ALL: None,
}
# Faults on messages: their rows (a lasting loss's heal) name the messages they acted on.
ON_MESSAGES = frozenset(fault.name for fault in CATALOGUE if "framing" in fault.needs)
# Faults made by the link proxies' toxics.
BY_PROXY = frozenset(fault.name for fault in CATALOGUE if fault.by_proxy)
# What a fixed schedule may make before the nodes start (a negative `at_s`):
# a lasting fault of the links, which are there before the nodes are.
BEFORE_START = tuple(f.name for f in CATALOGUE if f.hits == "link" and f.recovery == "heal" and not f.makes)
# Link faults that slow or thin the traffic, never cut it.
SLOWS = frozenset(fault.name for fault in CATALOGUE if fault.slows)
# Operations whose coverage cells are counted: the faults a history holds, not the changes made in passing.
COUNTED = tuple(f.name for f in CATALOGUE if not f.makes and not (f.bookkeeping and f.instant))


# Where a fault that may hit many nodes at once is aimed, besides the roles.
AT_ONCE = ("majority", "all")


def of_kind(hits: str, guided: bool | None = None) -> tuple[str, ...]:
    """The `--nemesis` kinds that hit `hits` (and are guided or not, when given)."""
    return tuple(
        f.name for f in CATALOGUE if f.hits == hits and not f.bookkeeping and (guided is None or f.guided == guided)
    )
