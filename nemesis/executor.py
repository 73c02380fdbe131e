"""Carries out nemesis operations on a cluster and records each as a history
operation of process -1: an `invoke` when asked, then `ok` once the fault is
in force (with what it touched in `node`), or `info` if it could not be
confirmed. `heal_all` undoes everything and is what every exit path calls.

The cluster is anything with start/kill/stop/pause/resume/wipe(node), `ids`
and `status(node)`; links go through a `LinkMesh` (or, on Docker, iptables).
"""

from __future__ import annotations

import json
import random
import threading
from typing import Any, Protocol

from history.coverage import CANDIDATE_STATES
from history.cuts import unheard
from history.errors import Defect
from history.faults import BY_NAME, HEAL_ALL
from history.operations import NemesisOp
from history.schema import NEMESIS_PROCESS

from .faults import FAMILIES, HEALS, OPERATIONS


class Recorder(Protocol):
    """Where the nemesis writes its history rows (results/recording.py's HistoryRecorder)."""

    def record(self, process: int, type: str, f: str, **fields: Any) -> dict[str, Any]: ...

    def now_ns(self) -> int: ...


class Nemesis:
    """Makes, records and heals the faults a strategy names, on a cluster
    (harness/cluster.py's, through its backend) and its links (a link
    applier, harness/link_applier.py); it keeps what is in force (paused,
    down, removed, full disks, clocks, confined clients) so that `heal_all`
    undoes exactly that."""

    def __init__(
        self,
        cluster: Any,
        links: Any,
        recorder: Recorder,
        rng: random.Random,
        clients: int = 0,
        workload: str = "append",
        settings: dict[str, Any] | None = None,
    ) -> None:
        self.cluster = cluster
        # What replica changes scale (`Capabilities.replica_changes`): the workload's stream, and the target's settings.
        self.workload = workload
        self.settings = settings or {}
        self.links = links
        self.recorder = recorder
        self.rng = rng
        # Clients on the minority's side of a partition (client index -> the
        # one node it can reach), until the links heal (`confine`).
        self.clients = clients
        self.confined: dict[int, str] = {}
        self.paused: set[str] = set()
        # Each paused node's last answer before its pause (`leader(paused_too=True)`).
        self.before_pause: dict[str, dict[str, Any] | None] = {}
        self.down: set[str] = set()
        # Removed members (`Capabilities.member_changes`): down until `rejoin` adds them back.
        self.removed: set[str] = set()
        # The workload's stream has fewer replicas than it began with (`Capabilities.replica_changes`),
        # and the servers its copies left, as the answers named them.
        self.scaled_down = False
        self.scaled_off: set[str] = set()
        # Nodes whose disk is full: given room again by `disk-space`.
        self.full: set[str] = set()
        # Nodes whose disk was full at any time: one may halt on a write that
        # failed just before its room came back (nemesis/faults/disk.py's `mend`).
        self.were_full: set[str] = set()
        # Nodes whose files a fault may have damaged (`Fault.damages`; node ->
        # when, on the history's clock, noted by `perform`), until the run
        # sees them repaired (nemesis/guided.py's `repaired`).
        self.damaged: dict[str, int] = {}
        self.faulty_links = False
        # Message losses in force (nemesis/faults/messages.py): their links and toxic's name, until a heal names what they dropped.
        self.losses: list[tuple[list[tuple[str, str]], str]] = []
        # Links cut by partitions (a brief fault cuts only the others, and
        # restores only its own); `heals` counts heal-alls, so a brief fault
        # that one overtook (an exit path's, from another thread) stops there.
        self.cut: set[tuple[str, str]] = set()
        self.heals = 0
        # A simulated schedule's node names -> the real nodes (`rename`).
        self.names: dict[str, str] = {}
        # Held while an operation is made: a node seen stopped then may be the nemesis's doing.
        self.busy = threading.Lock()
        self.links_lock = threading.Lock()
        # Clock faults in force: node -> (the fault's args, when it began on
        # time.monotonic()); a thread rewrites the offsets that change with time.
        self.clocks: dict[str, tuple[dict[str, Any], float]] = {}
        self.clock_lock = threading.Lock()
        self.clock_ticker: threading.Thread | None = None

    @property
    def in_force(self) -> bool:
        """Whether any fault still holds: what a run's end heals."""
        return bool(
            self.paused
            or self.down
            or self.removed
            or self.scaled_down
            or self.full
            or self.clocks
            or self.faulty_links
        )

    # ------------------------------------------------------------------ recording

    def invoke(self, op: NemesisOp) -> dict[str, Any]:
        """Record, perform and confirm one operation; returns the completion row."""
        self.recorder.record(NEMESIS_PROCESS, "invoke", op.f, value=op.args or None)
        try:
            with self.busy:
                touched = self.perform(op)
        except Exception as error:  # any failure to confirm a fault is an `info`, never a crash of the run
            return self.recorder.record(NEMESIS_PROCESS, "info", op.f, value=op.args or None, error=str(error))
        return self.recorder.record(NEMESIS_PROCESS, "ok", op.f, value=op.args or None, node=json.dumps(touched))

    # ------------------------------------------------------------------ faults

    def perform(self, op: NemesisOp) -> Any:
        """Make one operation (its fault family's, nemesis/faults/); what it
        touched, for its history row: nodes, links, or what was damaged."""
        if op.f == HEAL_ALL:
            return self.heal_all()
        make = OPERATIONS.get(op.f)
        if make is None:
            raise Defect(f"unknown nemesis operation {op.f!r}")
        touched = make(self, op.f, op.args)
        fault = BY_NAME.get(op.f)
        if fault is not None and fault.damages:  # noted once made: a status polled after this is the damaged node's
            at_ns = self.recorder.now_ns()
            self.damaged.update((node, at_ns) for node in touched if isinstance(node, str))
        return touched

    def named(self, node: Any) -> str:
        """The real node a simulated schedule's name stands for (nemesis/faults/rename.py)."""
        return self.names.get(str(node), str(node))

    def named_nodes(self, args: dict[str, Any]) -> list[str] | None:
        """The real nodes an operation's `nodes` name, or None where it names none."""
        return [self.named(node) for node in args["nodes"]] if args.get("nodes") else None

    def heal_all(self) -> list[Any]:
        """Everything each fault family left in force undone, in HEAL_ORDER
        (clocks set right, full disks given room, paused nodes resumed,
        links healed, dead nodes started, removed members added back); the
        nodes touched, then the messages that losses in force dropped."""
        nodes: set[str] = set()
        dropped: list[Any] = []
        for heal in HEALS:
            for touched in heal(self):
                (nodes.add if isinstance(touched, str) else dropped.append)(touched)
        return [*sorted(nodes), *dropped]

    def start_stopped(self) -> list[str]:
        """After a heal, the nodes a fault stopped since (not the nemesis's doing), started again."""
        return [node for family in FAMILIES if family.mend for node in family.mend(self)]

    def confine(self, rng: random.Random, at_least: int = 0) -> None:
        """A partition cuts clients off with their nodes: clients are spread
        over the nodes (as Jepsen binds each client to one), so the nodes
        that talk with no majority keep their share of them (at least one,
        or `at_least` where a translated schedule names more; at most half
        of all), each able to reach only a node on that side. A node talks
        with those it both reaches and hears, under every link cut in force:
        partitions made one after another cut the network together, and a
        leader that reaches one follower and hears only the other is as cut
        off as one that reaches neither. A client free to go anywhere soon
        finds the new leader; one left beside a node cut off is the one that
        sees what that node still says."""
        ids = list(self.cluster.ids)
        side = sorted(n for n in ids if unheard(self.cut, n, ids))
        self.confined.clear()
        if not side or not self.clients:
            return
        share = max(1, at_least, round(self.clients * len(side) / len(ids)))
        for i, client in enumerate(sorted(rng.sample(range(self.clients), min(share, self.clients // 2)))):
            self.confined[client] = side[i % len(side)]

    # ------------------------------------------------------------------ choosing

    def leader(self, paused_too: bool = False) -> str | None:
        """The node that says it leads in the highest epoch, among those that
        can answer (asking a paused or dead node only waits out a timeout);
        where the target's status names no epoch, the first that says it leads.
        `paused_too`: a paused node as well, by its answer before its pause,
        where it led in a higher epoch than any that answers now: its
        followers still follow it, so a cut aimed at the leader cuts its links
        (as a simulated schedule's does), and holds as it resumes."""
        answers = {node: self.cluster.status(node) for node in self.cluster.ids if node not in self.down | self.paused}
        if paused_too:
            answers |= {node: self.before_pause.get(node) for node in sorted(self.paused)}
        best = None
        for node, status in answers.items():
            epoch = status.get("epoch") if status else None
            if status and status.get("state") == "leader" and (best is None or (epoch or -1) > best[0]):
                best = (epoch or -1, node)
        return best[1] if best else None

    def aimed(self, args: dict[str, Any], rng: random.Random | None = None) -> list[str]:
        """The nodes an operation names, or those its target (a role) picks now
        (`count` followers: as many as there are, up to it; the leader, else
        any live node, or none with `only_a_leader`, as a simulated schedule's
        step that finds no leader does nothing)."""
        named = self.named_nodes(args)
        if named is not None:
            return named
        if args.get("only_a_leader"):
            leader = self.leader()
            return [leader] if leader in self.live() else []
        return self.targets(args.get("target", "one"), rng or random.Random(args.get("seed")), args.get("count", 1))

    def live(self) -> list[str]:
        return [n for n in self.cluster.ids if n not in self.down | self.paused | self.removed]

    def targets(self, target: str, rng: random.Random, count: int = 1) -> list[str]:
        live = self.live()
        if not live:
            return []
        if target == "leader":
            leader = self.leader()
            return [leader] if leader in live else [rng.choice(live)]
        if target == "follower":  # not a node that says it leads (a deposed leader cut off may not know yet)
            followers = [n for n in live if (self.cluster.status(n) or {}).get("state") != "leader"]
            return sorted(rng.sample(followers, min(count, len(followers))))
        if target == "candidate":  # a node mid-election, if there is one
            running = [n for n in live if (self.cluster.status(n) or {}).get("state") in CANDIDATE_STATES]
            return [rng.choice(running)] if running else [rng.choice(live)]
        if target in ("minority", "majority"):
            size = len(self.cluster.ids)
            count = min(len(live), (size - 1) // 2 if target == "minority" else size // 2 + 1)
            return sorted(rng.sample(live, count))
        if target == "all":
            return sorted(live)
        return [rng.choice(live)]
