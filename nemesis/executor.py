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
import time
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from checkers.coverage import CANDIDATE_STATES
from history.cuts import unheard
from history.errors import Defect
from history.faults import BY_NAME
from history.schema import NEMESIS_PROCESS

from . import clock, messages, topologies
from .members import MemberChanges
from .membership import VoterChanges
from .replicas import ReplicaChanges
from .schedule import NemesisOp


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
        # failed just before its room came back (`start_halted_on_full_disk`).
        self.were_full: set[str] = set()
        # Nodes whose files a fault may have damaged (`Fault.damages`; node ->
        # when, on the history's clock, noted by `perform`), until the run
        # sees them repaired (nemesis/guided.py's `repaired`).
        self.damaged: dict[str, int] = {}
        self.faulty_links = False
        # Message losses in force (nemesis/messages.py): their links and toxic's name, until a heal names what they dropped.
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
        self._links_lock = threading.Lock()
        # Clock faults in force: node -> (the fault's args, when it began on
        # time.monotonic()); a thread rewrites the offsets that change with time.
        self.clocks: dict[str, tuple[dict[str, Any], float]] = {}
        self._clock_lock = threading.Lock()
        self._clock_ticker: threading.Thread | None = None

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
        """Make one operation (OPERATIONS names each one's method); what it
        touched, for its history row: nodes, links, or what was damaged."""
        make = OPERATIONS.get(op.f)
        if make is None:
            raise Defect(f"unknown nemesis operation {op.f!r}")
        touched = make(self, op.f, op.args)
        fault = BY_NAME.get(op.f)
        if fault is not None and fault.damages:  # noted once made: a status polled after this is the damaged node's
            at_ns = self.recorder.now_ns()
            self.damaged.update((node, at_ns) for node in touched if isinstance(node, str))
        return touched

    def _partition(self, f: str, args: dict[str, Any]) -> list[Any]:
        """A topology's cut (aimed at the leader, or at a role), or the `links` named (a translated schedule's)."""
        rng = random.Random(args.get("seed"))
        if "links" in args:
            grudge = topologies.from_links({(self.named(src), self.named(dst)) for src, dst in args["links"]})
        elif args.get("only_a_leader") and self.leader() is None:
            grudge = {}
        elif args.get("target") in ("follower", "candidate"):  # the guided nemesis aims by role
            chosen = self.targets(args["target"], rng)
            grudge = topologies.aimed(args, list(self.cluster.ids), rng, self.leader(), chosen[0]) if chosen else {}
        else:
            grudge = topologies.make(args["topology"], list(self.cluster.ids), rng, self.leader())
        self.faulty_links = True
        made = self.links.cut(topologies.links(grudge))
        self.cut |= set(made)
        self.confine(rng, args.get("clients", 0))
        return [list(link) for link in made]

    def _flicker(self, f: str, args: dict[str, Any]) -> list[Any]:
        """The aimed node's links cut both ways for `cut_ms`, `times` times,
        `gap_ms` apart (nemesis/brief.py); links a partition holds stay cut."""
        nodes = self.aimed(args)
        heals = self.heals
        links = [link for link in self.links.links if set(link) & set(nodes)]
        for time_ in range(args.get("times", 1)):
            if time_:
                time.sleep(args["gap_ms"] / 1000)
            with self._links_lock:
                if self.heals != heals:
                    break
                made = self.links.cut([link for link in links if link not in self.cut])
            time.sleep(args["cut_ms"] / 1000)
            with self._links_lock:
                if self.heals == heals:
                    self.links.restore(made)
        return nodes

    def _stall(self, f: str, args: dict[str, Any]) -> list[Any]:
        """The aimed node paused for `for_ms` and resumed (unless a heal-all did first)."""
        nodes = [node for node in self.aimed(args) if node not in self.down]
        for node in nodes:
            self.fault_node("pause", node)
        time.sleep(args["for_ms"] / 1000)
        for node in nodes:
            if node in self.paused:
                self.fault_node("resume", node)
        return nodes

    def _latency(self, f: str, args: dict[str, Any]) -> list[Any]:
        self.faulty_links = True
        attributes = {"latency": args["latency_ms"], "jitter": args.get("jitter_ms", 0)}
        return [list(link) for link in self.links.add_toxic(self.links.links, "latency", attributes)]

    def _heal_links(self, f: str, args: dict[str, Any]) -> list[Any]:
        """Every link whole again; the messages the losses in force dropped, named."""
        with self._links_lock:
            dropped = messages.healed(self)
            self.links.heal()
            self.cut.clear()
        self.faulty_links = False
        self.confined.clear()
        return dropped

    def _rename(self, f: str, args: dict[str, Any]) -> list[Any]:
        """A simulated schedule's names put on the real nodes: the node that
        led in the simulation when its faults began is the real leader now
        (the two names swapped), so a step that names a node hits the one in
        the same role; the pairs renamed."""
        real, simulated = self.leader(), str(args["leader"])
        self.names = {simulated: real, real: simulated} if real and real != simulated else {}
        return [[name, node] for name, node in sorted(self.names.items())]

    def named(self, node: Any) -> str:
        return self.names.get(str(node), str(node))

    def named_nodes(self, args: dict[str, Any]) -> list[str] | None:
        """The real nodes an operation's `nodes` name, or None where it names none."""
        return [self.named(node) for node in args["nodes"]] if args.get("nodes") else None

    def _clock(self, f: str, args: dict[str, Any]) -> list[Any]:
        nodes = self.aimed(args)
        self.move_clocks(nodes, args)
        return nodes

    def _disk_full(self, f: str, args: dict[str, Any]) -> list[Any]:
        nodes = self.aimed(args)
        for node in nodes:
            self.cluster.fill_disk(node)
            self.full.add(node)
            self.were_full.add(node)
        return nodes

    def _corrupt(self, f: str, args: dict[str, Any]) -> list[Any]:
        rng = random.Random(args.get("seed"))
        touched: list[Any] = []
        for node in self.aimed(args, rng):
            self.cluster.kill(node)
            try:
                # What was damaged, for the history; a schedule may name the kind of file and the mode (flip, truncate).
                touched += [node, self.cluster.corrupt(node, rng, args.get("kind"), args.get("mode"))]
            finally:  # a file that could not be damaged (none of the kind written yet) leaves the node as it was
                self.cluster.start(node)
                self.paused.discard(node)
                self.down.discard(node)
        return touched

    def _node_fault(self, f: str, args: dict[str, Any]) -> list[Any]:
        """pause, kill, restart, bounce, wipe, lose-unfsynced: on each node aimed at."""
        nodes = self.aimed(args)
        changes = self.changes() if f == "wipe" else None
        if changes is not None and not isinstance(changes, VoterChanges):  # a voter's wipe is a node fault of its own
            return changes.wipe(nodes)
        if f == "lose-unfsynced" and len(nodes) > 1:
            return self.power_loss(nodes)
        for node in nodes:
            self.fault_node(f, node)
        return nodes

    def _bring_back(self, f: str, args: dict[str, Any]) -> list[Any]:
        """resume every paused node, or start every downed one (those of them named, if `nodes` are)."""
        nodes = sorted(self.paused if f == "resume" else self.down)
        named = self.named_nodes(args)
        if named is not None:
            nodes = [node for node in nodes if node in named]
        for node in nodes:
            self.fault_node(f, node)
        return nodes

    def _start_observers(self, f: str, args: dict[str, Any]) -> list[Any]:
        for node in self.cluster.observers:
            self.cluster.start(node)
        return list(self.cluster.observers)

    def _shrink(self, f: str, args: dict[str, Any]) -> list[Any]:
        return self.changes().shrink(args.get("count", 1), random.Random(args.get("seed")), self.named_nodes(args))

    def fault_node(self, f: str, node: str) -> None:
        cluster = self.cluster
        if f == "pause" and node not in self.down:
            cluster.pause(node)
            self.paused.add(node)
        elif f == "resume":
            cluster.resume(node)
            self.paused.discard(node)
        elif f == "kill":
            cluster.kill(node)
            self.paused.discard(node)
            self.down.add(node)
        elif f == "start":
            cluster.start(node)
            self.down.discard(node)
        elif f in ("restart", "bounce", "wipe", "lose-unfsynced"):
            if f == "restart":
                cluster.resume(node)
                cluster.stop(node)
            else:
                cluster.kill(node)
            if f == "wipe":
                cluster.wipe(node)
            elif f == "lose-unfsynced":
                cluster.lose(node)
            cluster.start(node)
            self.paused.discard(node)
            self.down.discard(node)

    def power_loss(self, nodes: list[str]) -> list[str]:
        """Several nodes' power lost at one instant: all killed first, then
        each one's unfsynced writes dropped, then all started, so none comes
        back while another still holds what it had not made durable."""
        for node in nodes:
            self.cluster.kill(node)
        for node in nodes:
            self.cluster.lose(node)
        for node in nodes:
            self.cluster.start(node)
            self.paused.discard(node)
            self.down.discard(node)
        return nodes

    def changes(self) -> MemberChanges | VoterChanges | ReplicaChanges:
        """Membership as the target takes it: learners and members, voters, or a stream's replicas."""
        capabilities = self.cluster.target.capabilities
        if capabilities.member_changes:
            return MemberChanges(self)
        return ReplicaChanges(self) if capabilities.replica_changes else VoterChanges(self)

    def heal_all(self) -> list[str]:
        """Clocks set right, full disks given room (and the nodes that stopped
        on them started), paused nodes resumed (iptables rules live in them),
        links healed, dead nodes started, removed members added back."""
        touched: list[Any] = sorted(
            self.paused | self.down | self.removed | set(self.reset_clocks()) | set(self.give_room())
        )
        for node in sorted(self.paused):
            self.fault_node("resume", node)
        with self._links_lock:
            self.heals += 1
            touched += messages.healed(self)  # what the losses in force dropped
            self.links.heal()
            self.cut.clear()
        self.faulty_links = False
        self.confined.clear()
        for node in sorted(self.down):
            self.fault_node("start", node)
        if self.removed or self.scaled_down:
            self.changes().rejoin()
        return touched

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

    def give_room(self) -> list[str]:
        """Full disks given room again; a node that stopped on its full disk
        (not one the nemesis took down) is started again."""
        freed = sorted(self.full)
        for node in freed:
            self.cluster.fill_disk(node, full=False)
        self._start_stopped(freed)
        self.full.clear()
        return freed

    def start_halted_on_full_disk(self) -> list[str]:
        """Start again the nodes whose disk was full that have stopped, though
        the nemesis did not take them down: a write that failed just before
        `give_room` halts its node a moment after (`give_room` saw it still
        running). What the node logged of it stays for the checkers."""
        return self._start_stopped(self.were_full - self.full)

    def _start_stopped(self, nodes: Iterable[str]) -> list[str]:
        """Of `nodes`, those stopped on their own (not taken down or removed by the nemesis), started again."""
        started = [
            node for node in sorted(nodes) if node not in self.down | self.removed and not self.cluster.running(node)
        ]
        for node in started:
            self.cluster.start(node)
        return started

    def move_clocks(self, nodes: list[str], args: dict[str, Any]) -> None:
        """Give each node's clock the fault's offset now; one that changes with
        time is rewritten every `clock.TICK_S` until the clocks are reset."""
        began = time.monotonic()
        with self._clock_lock:
            for node in nodes:
                self.cluster.set_clock(node, clock.offset_ms(args, 0.0))
                self.clocks[node] = (args, began)
            if clock.changes(args) and (self._clock_ticker is None or not self._clock_ticker.is_alive()):
                self._clock_ticker = threading.Thread(target=self._tick_clocks, name="clock-faults", daemon=True)
                self._clock_ticker.start()

    def _tick_clocks(self) -> None:
        while True:
            time.sleep(clock.TICK_S)
            with self._clock_lock:
                moving = {node: fault for node, fault in self.clocks.items() if clock.changes(fault[0])}
                if not moving:
                    return
                now = time.monotonic()
                for node, (args, began) in moving.items():
                    self.cluster.set_clock(node, clock.offset_ms(args, now - began))

    def reset_clocks(self) -> list[str]:
        """Every clock back to true time; the ones that were moved."""
        with self._clock_lock:
            moved = sorted(self.clocks)
            for node in moved:
                self.cluster.set_clock(node, 0)
            self.clocks.clear()
        return moved

    # ------------------------------------------------------------------ choosing

    def leader(self) -> str | None:
        """The node that says it leads in the highest epoch, among those that
        can answer (asking a paused or dead node only waits out a timeout);
        where the target's status names no epoch, the first that says it leads."""
        best = None
        for node in self.cluster.ids:
            if node in self.down | self.paused:
                continue
            status = self.cluster.status(node)
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


# Each operation the nemesis makes (a fault, or what undoes one) and the method that makes it.
OPERATIONS: dict[str, Callable[[Nemesis, str, dict[str, Any]], Any]] = {
    "partition": Nemesis._partition,
    "flicker": Nemesis._flicker,
    "rename": Nemesis._rename,
    "stall": Nemesis._stall,
    "latency": Nemesis._latency,
    **dict.fromkeys(messages.KINDS, messages.make),
    messages.LOSS: messages.lose,
    "heal": Nemesis._heal_links,
    "clock": Nemesis._clock,
    "clock-reset": lambda nemesis, f, args: nemesis.reset_clocks(),
    "disk-full": Nemesis._disk_full,
    "disk-space": lambda nemesis, f, args: nemesis.give_room(),
    "corrupt": Nemesis._corrupt,
    **dict.fromkeys(("pause", "kill", "restart", "bounce", "wipe", "lose-unfsynced"), Nemesis._node_fault),
    "resume": Nemesis._bring_back,
    "start": Nemesis._bring_back,
    "start-observers": Nemesis._start_observers,
    "shrink": Nemesis._shrink,
    "rejoin": lambda nemesis, f, args: nemesis.changes().rejoin(nemesis.named_nodes(args)),
    "heal-all": lambda nemesis, f, args: nemesis.heal_all(),
}
