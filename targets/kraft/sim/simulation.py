"""A deterministic simulated cluster of sans-IO cores, for tests and figures.

One seed decides everything: message delays and drops, election timeouts.
Time advances in `tick_ms` steps; within a step, due messages are delivered
in send order, then every running node ticks. After every node action the
Ready batch is made "durable" on the node's simulated disk (persist before
send), its messages are queued, and the `SafetyMonitor` checks the cluster.

Faults: directed link cuts, drop probability and delay range, pause (no
ticks, messages held until resume), crash (memory lost, disk kept; with
`lose_unsynced`, also every write not yet fsynced, as a power loss),
restart (a new core from the disk, a new generation), wipe (disk lost:
the node comes back formatted as an observer, with a new directory id) and
clock jumps (a node's clock set off true time: what it is told is now;
what breaks a read lease).
With `flush_interval_ms`, followers fsync on that timer, not per write.

Membership: `nodes` voters (or one, `standalone`) and `observers` more
replicas that start outside the voter set; operators add and remove voters
through the leader, and `auto_join` replicas add themselves.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import random
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from history.faults import BOUNCE, CLOCK, PAUSE, WIPE

from ..core import RaftConfig, RaftCore, Ready
from ..messages import Entry, Message
from ..quorum_state import ElectionState
from ..voters import VoterSet
from .invariants import InvariantViolation, SafetyMonitor
from .stuck import StuckWatch


@dataclass
class SimDisk:
    """What survives a crash: the quorum-state file, the log file, the
    generation, and the directory id made when the disk was formatted, with
    the voter set it was formatted to bootstrap (empty: an observer)."""

    directory_id: str
    bootstrap: tuple[tuple[str, str], ...] = ()
    election_state: ElectionState = field(default_factory=ElectionState)
    entries: list[Entry] = field(default_factory=list)
    generation: int = 0
    # How many of `entries` are fsynced; whether the last life ended in a
    # crash, and whether that crash lost writes (until the node starts again).
    synced: int = 0
    crashed: bool = False
    lost: bool = False


@dataclass
class SimSettings:
    nodes: int = 3
    seed: int = 0
    election_timeout_ms: int = 100
    fetch_timeout_ms: int = 200
    fetch_max_wait_ms: int = 40
    request_timeout_ms: int = 80
    tick_ms: int = 5
    min_delay_ms: int = 1
    max_delay_ms: int = 8
    drop_rate: float = 0.0
    pre_vote: bool = True
    check_quorum: bool = True
    bugs: frozenset[str] = frozenset()
    # Off: let violations happen unchecked, to see whether the history checkers catch them.
    check_invariants: bool = True
    observers: int = 0
    standalone: bool = False
    auto_join: bool = False
    ack_when_committed_always: bool = False
    voter_change_timeout_ms: int = 400
    flush_interval_ms: int = 0
    read_lease_ms: int = 0
    # Power losses keep the unfsynced writes, as a plain kill and restart
    # does: the same schedule without what the power loss adds.
    writes_survive_power_loss: bool = False
    fetch_max_records: int = RaftConfig.max_fetch_records


class Simulation:
    def __init__(self, settings: SimSettings) -> None:
        self.settings = settings
        self.rng = random.Random(settings.seed)
        self.ids = tuple(f"n{i}" for i in range(1, settings.nodes + settings.observers + 1))
        self.now_ms = 0
        # Each node's clock, as an offset from true time (`now_ms`).
        self.clock_ms = {node: 0 for node in self.ids}
        self.formats = {node: 0 for node in self.ids}
        initial = self.ids[: 1 if settings.standalone else settings.nodes]
        self.disks = {node: self._format(node) for node in self.ids}
        bootstrap = tuple((node, self.disks[node].directory_id) for node in initial)
        for node in initial:
            self.disks[node].bootstrap = bootstrap
        self.nodes: dict[str, RaftCore | None] = {node: None for node in self.ids}
        self.paused: set[str] = set()
        self.held: dict[str, list[Message]] = {node: [] for node in self.ids}
        self.held_commands: dict[str, list[tuple[int, dict]]] = {node: [] for node in self.ids}
        self.cut: set[tuple[str, str]] = set()
        self.drop_rate = settings.drop_rate
        self.delay_ms = (settings.min_delay_ms, settings.max_delay_ms)
        self.monitor = SafetyMonitor()
        self.stuck = StuckWatch()
        self.replies: dict[Any, dict] = {}
        # Client requests as a history needs them: request id -> (node, command, invoke ms),
        # and request id -> answer ms.
        self.requests: dict[Any, tuple[str, dict, int]] = {}
        self.answered_ms: dict[Any, int] = {}
        self.events: list[tuple[int, str, dict]] = []
        # The moments a leader's isolation is armed for (`arm`), and the
        # (leader, epoch) leaderships that have committed, armed or not.
        self.armed: set[str] = set()
        self._committed: set[tuple[str, int]] = set()
        self._queue: list[tuple[int, int, Message]] = []
        self._seq = itertools.count()
        self._request_ids = itertools.count()
        for node in self.ids:
            self.start(node)

    # ------------------------------------------------------------------ faults

    def _format(self, node: str) -> SimDisk:
        self.formats[node] += 1
        return SimDisk(directory_id=f"{node}.{self.formats[node]}")

    def config(self, node: str) -> RaftConfig:
        s = self.settings
        disk = self.disks[node]
        return RaftConfig(
            node_id=node,
            bootstrap=disk.bootstrap,
            peers=self.ids,
            directory_id=disk.directory_id,
            auto_join=s.auto_join,
            ack_when_committed_always=s.ack_when_committed_always,
            voter_change_timeout_ms=s.voter_change_timeout_ms,
            election_timeout_ms=s.election_timeout_ms,
            fetch_timeout_ms=s.fetch_timeout_ms,
            fetch_max_wait_ms=s.fetch_max_wait_ms,
            request_timeout_ms=s.request_timeout_ms,
            pre_vote=s.pre_vote,
            check_quorum=s.check_quorum,
            bugs=s.bugs,
            generation=disk.generation,
            flush_interval_ms=s.flush_interval_ms,
            read_lease_ms=s.read_lease_ms,
            unclean_start=disk.crashed,
            max_fetch_records=s.fetch_max_records,
        )

    def start(self, node: str) -> None:
        """Start (or restart after a crash) a node from its disk."""
        if self.nodes[node] is not None:
            return
        disk = self.disks[node]
        disk.generation += 1
        disk.synced = len(disk.entries)
        disk.lost = False
        config = self.config(node)  # (settings that do not fit together are the user's, not a halt)
        with self.halting(node):
            core = RaftCore(
                config,
                disk.election_state,
                list(disk.entries),
                random.Random(self.rng.random()),
                self.node_time(node),
            )
            self.nodes[node] = core
            self.monitor.restarted(node)
            self._drain(core)

    @contextlib.contextmanager
    def halting(self, node: str) -> Iterator[None]:
        """A node's core that raises (one of its own rules broken: a bug)
        halts the node, as the real node's shell halts it (targets/kraft/
        server.py), which a real run's `node-crashes` counts: here a violation
        of the schedule, with its seed and steps, not the simulation's crash."""
        try:
            yield
        except InvariantViolation:
            raise
        except Exception as error:  # noqa: BLE001 - any defect of the core is fatal
            self.monitor.fail(f"{node} halted: {type(error).__name__}: {error}")

    def crash(self, node: str, lose_unsynced: bool = False) -> None:
        if self.nodes[node] is not None:
            disk = self.disks[node]
            disk.crashed = True
            if lose_unsynced and not self.settings.writes_survive_power_loss:
                del disk.entries[disk.synced :]
                disk.lost = True
        self.nodes[node] = None
        self.paused.discard(node)
        self.held[node].clear()
        for request_id, _ in self.held_commands[node]:
            self._answer(request_id, {"error": "unavailable"})
        self.held_commands[node].clear()

    def wipe(self, node: str) -> None:
        """Lose the node's disk: it restarts formatted as an observer, a new replica."""
        self.crash(node)
        self.disks[node] = self._format(node)
        self.start(node)

    def pause(self, node: str) -> None:
        if self.nodes[node] is not None:
            self.paused.add(node)

    def resume(self, node: str) -> None:
        """Resume a paused node: what reached it while stopped is handled
        before its overdue timers fire, as a resumed process reads its sockets."""
        if node not in self.paused:
            return
        self.paused.discard(node)
        core = self.nodes[node]
        commands, self.held_commands[node] = self.held_commands[node], []
        for request_id, command in commands:
            if core is not None:
                with self.halting(node):
                    core.submit(request_id, command, self.node_time(node))
                    self._drain(core)
        held, self.held[node] = self.held[node], []
        for msg in held:
            self._deliver(msg, buffered=True)

    def partition(self, *groups: set[str] | tuple[str, ...]) -> None:
        """Cut every link between different groups (both directions)."""
        side = {node: i for i, group in enumerate(groups) for node in group}
        for a, b in itertools.permutations(self.ids, 2):
            if side.get(a, -1) != side.get(b, -2):
                self.cut.add((a, b))

    def isolate(self, node: str) -> None:
        self.partition({node}, set(self.ids) - {node})

    def heal(self) -> None:
        self.cut.clear()

    def arm(self, moment: str) -> None:
        """Cut a leader off from everyone at the next `moment`: as it is
        elected (`election`), or as it first commits in its epoch (`commit`:
        the records of earlier epochs it finds on a majority become
        committed then, Raft's commit rule permitting). It happens between the
        node's step and its messages going out, so what that step would
        send is lost with the links, as when a node is cut off right after
        it wrote to its disk. Faults timed by these moments, not by the
        clock: a schedule's steps land between them only by chance."""
        self.armed.add(moment)

    def _at_moment(self, node: str, event: dict) -> None:
        if event["event"] == "transition" and event["state"] == "leader":
            moment = "election"
        elif event["event"] == "commit" and "replicas" in event and (node, event["epoch"]) not in self._committed:
            self._committed.add((node, event["epoch"]))
            moment = "commit"
        else:
            return
        if moment in self.armed:
            self.armed.discard(moment)
            self.isolate(node)

    def leaders(self) -> dict[str, int]:
        """Nodes that currently believe they lead, with their epochs."""
        return {
            node: core.epoch for node, core in self.nodes.items() if core is not None and core.state.name == "leader"
        }

    def leader(self) -> str | None:
        """The leader of the highest epoch any running node believes in."""
        leaders = self.leaders()
        return max(leaders, key=leaders.__getitem__) if leaders else None

    def voter_set(self) -> VoterSet:
        """The voter set in force at the newest leader (empty without one)."""
        leader = self.leader()
        core = self.nodes[leader] if leader else None
        return core.voters if core else VoterSet()

    def add_voter(self, node: str, ack_when_committed: bool = True) -> int:
        """An operator's AddRaftVoter for `node` as its disk is now, sent to the newest leader."""
        command = {
            "op": "add-voter",
            "node": node,
            "directory_id": self.disks[node].directory_id,
            "ack_when_committed": ack_when_committed,
        }
        return self.submit(self.leader() or self.ids[0], command)

    def remove_voter(self, node: str) -> int:
        """An operator's RemoveRaftVoter of `node` under the directory the voter set names."""
        command = {"op": "remove-voter", "node": node, "directory_id": self.voter_set().directory_of(node)}
        return self.submit(self.leader() or self.ids[0], command)

    def healthy_voters(self, settled: bool = True) -> bool:
        """May an operator take a voter away now? Seen with the simulator's
        omniscience: the committed voter set has at least three voters and
        names every one by the directory its node has now, and (`settled`)
        no voter change is in flight in any log. Losing one of them then
        still leaves a majority holding every committed record."""
        cores = [core for core in self.nodes.values() if core is not None]
        newest = max(cores, key=lambda core: core.hwm, default=None)
        if newest is None:
            return False
        committed = max((o for o in newest.log.voter_offsets if o < newest.hwm), default=None)
        if committed is None:
            return False
        if settled and any(core.log.last_voter_offset() not in (None, committed) for core in cores):
            return False
        voters = VoterSet.from_record(newest.log.entries[committed].data).voters
        return len(voters) >= 3 and self.intact(voters) == len(voters)

    def quorum_intact(self) -> bool:
        """Can the cluster still elect? Every voter set a node is in force
        under has a majority of voters whose disks still hold the identity
        it names: a set left with a majority of lost disks (a wipe and a
        removal that crossed) waits for ever, correctly."""
        for core in self.nodes.values():
            voters = core.voters.voters if core is not None else ()
            if voters and 2 * self.intact(voters) <= len(voters):
                return False
        return True

    def intact(self, voters: Iterable[tuple[str, str | None]]) -> int:
        """How many of `voters` name the directory their node's disk holds now (not lost since)."""
        return sum(self.disks[node].directory_id == directory for node, directory in voters)

    def may_lose_unsynced(self, node: str) -> bool:
        """May `node` lose its unflushed writes now? Only while no other node
        is behind from such a loss (down since, or catching up): replication
        stands in for fsync only while one copy at a time is lost."""
        return all(
            not (self.disks[other].lost or (core is not None and core.catching_up))
            for other, core in self.nodes.items()
            if other != node
        )

    # ------------------------------------------------------------------ clients

    def submit(self, node: str, command: dict) -> int:
        """Send a client command to `node`; its answer lands in `self.replies`."""
        request_id = next(self._request_ids)
        self.requests[request_id] = (node, command, self.now_ms)
        core = self.nodes[node]
        if core is None:
            self._answer(request_id, {"error": "unavailable"})
            return request_id
        if command.get("op") == "read":
            self.monitor.read_invoked(request_id, command["key"])
        if node in self.paused:
            # A stopped process still has the request in its socket buffer.
            self.held_commands[node].append((request_id, command))
            return request_id
        with self.halting(node):
            core.submit(request_id, command, self.node_time(node))
            self._drain(core)
        return request_id

    # ------------------------------------------------------------------ time

    def node_time(self, node: str) -> int:
        """Now, by the node's clock."""
        return self.now_ms + self.clock_ms[node]

    def run(self, duration_ms: int) -> None:
        end = self.now_ms + duration_ms
        while self.now_ms < end:
            self.now_ms += self.settings.tick_ms
            self.monitor.now_ms = self.now_ms
            while self._queue and self._queue[0][0] <= self.now_ms:
                _, _, msg = heapq.heappop(self._queue)
                self._deliver(msg)
            flush = self.settings.flush_interval_ms
            for node, core in self.nodes.items():
                if core is not None and node not in self.paused:
                    with self.halting(node):
                        if flush and self.now_ms % flush < self.settings.tick_ms:
                            self.disks[node].synced = len(self.disks[node].entries)
                            core.synced(self.disks[node].synced, self.node_time(node))
                        core.tick(self.node_time(node))
                        self._drain(core)
            if self.settings.check_invariants:
                self.stuck.tick(self)

    def _deliver(self, msg: Message, buffered: bool = False) -> None:
        """`msg` to its node, unless its link is cut or the node is down; held
        while the node is paused. `buffered`: it reached the paused node before
        and waited in its socket buffer, which a cut made since cannot take
        back (a real kernel took the bytes in while the process was stopped)."""
        core = self.nodes[msg.dst]
        if core is None or (not buffered and (msg.src, msg.dst) in self.cut):
            return
        if msg.dst in self.paused:
            self.held[msg.dst].append(msg)
            return
        with self.halting(msg.dst):
            core.step(msg, self.node_time(msg.dst))
            self._drain(core)

    def _drain(self, core: RaftCore) -> None:
        while core.has_ready():
            ready = core.ready()
            self._persist(core.node_id, ready)
            if self.settings.check_invariants:
                self.monitor.observe(core, ready)
            for event in ready.events:
                self.events.append((self.now_ms, core.node_id, event))
                self._at_moment(core.node_id, event)
            for msg in ready.messages:
                self._send(msg)
            for request_id, reply in ready.replies:
                self._answer(request_id, reply)
            core.advance(ready, self.node_time(core.node_id))

    def _answer(self, request_id: Any, reply: dict) -> None:
        self.replies[request_id] = reply
        self.answered_ms[request_id] = self.now_ms

    def _persist(self, node: str, ready: Ready) -> None:
        disk = self.disks[node]
        if ready.election_state is not None:
            disk.election_state = ready.election_state
        del disk.entries[ready.log_from :]
        disk.entries.extend(ready.entries)
        disk.synced = len(disk.entries) if ready.sync else min(disk.synced, len(disk.entries))

    def _send(self, msg: Message) -> None:
        if (msg.src, msg.dst) in self.cut or self.rng.random() < self.drop_rate:
            return
        delay = self.rng.randint(*self.delay_ms)
        heapq.heappush(self._queue, (self.now_ms + delay, next(self._seq), msg))


ACTIONS = (
    "run",
    "isolate",
    "isolate_leader",
    "cut",
    "heal",
    PAUSE,
    "pause_leader",
    "resume",
    "resume_all",
    "crash",
    "crash_leader",
    "start",
    BOUNCE,
    "network",
)
DISK_ACTIONS = ("lose_unsynced", "lose_leader")
CLOCK_ACTIONS = (CLOCK, "clock_leader")
# Steps that arm a leader's isolation for a moment (`Simulation.arm`), not make it now.
MOMENT_ACTIONS = {"isolate_at_election": "election", "isolate_at_commit": "commit"}
# The share of messages a `network` step drops, by its amount.
DROP_RATES = (0.0, 0.05, 0.2)
# A clock step sets the node's offset from true time to one of these (ms).
CLOCK_OFFSETS = (-2000, -400, 0, 400)
MEMBERSHIP_ACTIONS = (WIPE, "add_voter", "remove_voter")
"""What a schedule step can do. A step is (action, node index, amount): the
node index picks a node (modulo the cluster size) and `amount` is the run
length in ms, the second node of a cut, or the network setting."""

Step = tuple[str, int, int]
# The load a schedule runs before its first step (a leader is elected by then).
LOAD_BEFORE_STEPS_MS = 300


class LoadedRun:
    """Client load during `run` steps: every 20 ms an append and a write or
    compare-and-set at the newest leader, and a read at every node that
    believes it leads (a paused one answers when resumed)."""

    def __init__(self, sim: Simulation) -> None:
        self.sim = sim
        self.values = itertools.count()

    def run(self, duration_ms: int) -> None:
        for _ in range(max(1, duration_ms // 20)):
            self.offer()
            self.sim.run(min(duration_ms, 20))

    def offer(self) -> None:
        sim = self.sim
        target = sim.leader() or sim.ids[0]
        value = next(self.values)
        key = "ab"[value % 2]
        sim.submit(target, {"op": "append", "value": value})
        if value % 3:
            sim.submit(target, {"op": "write", "key": key, "value": next(self.values)})
        else:
            sim.submit(target, {"op": "cas", "key": key, "expected": None, "new": next(self.values)})
        for leader in sorted(sim.leaders()):
            sim.submit(leader, {"op": "read", "key": key})


def run_schedule(settings: SimSettings, steps: list[Step], changed: set[int] | None = None) -> Simulation:
    """Run `steps` under client load, then heal and quiesce. Any broken
    invariant raises `InvariantViolation` at the step that broke it.
    `changed` collects the indices of the membership steps that were made
    (a wipe or a removal waits for healthy voters)."""
    sim = Simulation(settings)
    load = LoadedRun(sim)
    load.run(LOAD_BEFORE_STEPS_MS)
    for at, (action, index, amount) in enumerate(steps):
        node = sim.ids[index % len(sim.ids)]
        leader = sim.leader()
        if action == "run":
            load.run(amount)
        elif action == "isolate":
            sim.isolate(node)
        elif action == "isolate_leader" and leader:
            sim.isolate(leader)
        elif action == "cut":
            other = sim.ids[amount % len(sim.ids)]
            if other != node:
                sim.cut.add((node, other))
        elif action == "heal":
            sim.heal()
        elif action == PAUSE:
            sim.pause(node)
        elif action == "pause_leader" and leader:
            sim.pause(leader)
        elif action == "resume":
            sim.resume(node)
        elif action == "resume_all":
            for each in sim.ids:
                sim.resume(each)
        elif action == "crash":
            sim.crash(node)
        elif action == "crash_leader" and leader:
            sim.crash(leader)
        elif action == "start":
            sim.start(node)
        elif action == BOUNCE:
            sim.crash(node)
            sim.start(node)
        elif action in DISK_ACTIONS:  # a power loss, the node back at once
            lost = leader if action == "lose_leader" else node
            if lost and sim.may_lose_unsynced(lost):
                sim.crash(lost, lose_unsynced=True)
                sim.start(lost)
        elif action in CLOCK_ACTIONS:
            moved = leader if action == "clock_leader" else node
            if moved:
                sim.clock_ms[moved] = CLOCK_OFFSETS[amount % len(CLOCK_OFFSETS)]
        elif action in MOMENT_ACTIONS:
            sim.arm(MOMENT_ACTIONS[action])
        elif action == "network":
            sim.drop_rate = DROP_RATES[amount % 3]
            sim.delay_ms = (1, (5, 20, 60)[amount % 3])
        elif action in MEMBERSHIP_ACTIONS:
            change_membership(sim, action, node, partial(changed.add, at) if changed is not None else lambda: None)
    settle(sim, load)
    return sim


def change_membership(sim: Simulation, action: str, node: str, made: Callable[[], object] = lambda: None) -> None:
    """A disk loss or an operator's voter change. Raft cannot survive losing a
    majority of its voters' disks, and no operator takes a voter away from an
    unhealthy set, so a wipe waits for settled, healthy voters
    (`Simulation.healthy_voters`) and a removal for healthy ones; an addition
    goes to the leader whatever the state, which must refuse what it cannot do.
    `made` is called when one is about to be made (it may break an invariant)."""
    voters = sim.voter_set()
    if action == WIPE and voters.has_node(node) and sim.healthy_voters():
        made()
        sim.wipe(node)
    elif action == "remove_voter" and voters.has_node(node) and sim.healthy_voters(settled=False):
        made()
        sim.remove_voter(node)
    elif action == "add_voter" and not voters.has_node(node):
        made()
        sim.add_voter(node)


def random_steps(
    rng: random.Random,
    count: int,
    membership: bool = False,
    power_losses: bool = False,
    clocks: bool = False,
    moments: bool = False,
) -> list[Step]:
    """A seeded random schedule; `run` steps are as common as all faults together."""
    actions = (
        ACTIONS[1:]
        + (MEMBERSHIP_ACTIONS if membership else ())
        + (DISK_ACTIONS if power_losses else ())
        + (CLOCK_ACTIONS if clocks else ())
        + (tuple(MOMENT_ACTIONS) if moments else ())
    )
    steps: list[Step] = []
    for _ in range(count):
        if rng.random() < 0.5:
            steps.append(("run", 0, rng.choice((5, 20, 60, 150, 400))))
        else:
            steps.append((rng.choice(actions), rng.randrange(8), rng.randrange(8)))
    return steps


# After the heal and 3 s of quiet, what a correct cluster does in the last stretch of a schedule.
STEADY_LOAD_MS = 200
STEADY_MS = 1200
WRITES = ("append", "write", "cas")


def settle(sim: Simulation, load: LoadedRun) -> None:
    """The end of every schedule: heal, quiesce, then load while nothing is
    wrong, and the liveness invariant, the simulation's `progress`: in a
    healed cluster, after 3 s (30 election timeouts) of quiet, a leader
    acknowledges writes and no node stands for election (where a majority
    of the voters' disks are intact: `quorum_intact`). A safety invariant
    cannot see a cluster that elects and then commits nothing, or whose
    followers stand while they hear their leader; of a real run's
    checkers, `progress` sees the first, and `availability` only counts
    the second's disruptive elections."""
    quiesce(sim)
    since_ms = sim.now_ms
    load.run(STEADY_LOAD_MS)
    sim.run(STEADY_MS - STEADY_LOAD_MS)
    if not (sim.settings.check_invariants and sim.quorum_intact()):
        return
    stood = sorted(
        {
            node
            for at, node, event in sim.events
            if at > since_ms and event["event"] == "transition" and event["state"] in ("prospective", "candidate")
        }
    )
    if stood:
        sim.monitor.fail(f"liveness: {', '.join(stood)} stood for election in a healed cluster after {since_ms} ms")
    acknowledged = [
        request
        for request, (_, command, invoked_ms) in sim.requests.items()
        if invoked_ms >= since_ms
        and command.get("op") in WRITES
        and "error" not in sim.replies.get(request, {"error": 0})
    ]
    if not acknowledged:
        sim.monitor.fail(f"liveness: no write acknowledged in a healed cluster after {since_ms} ms")


def quiesce(sim: Simulation, duration_ms: int = 3000) -> None:
    """Heal everything, restart everyone, and let the cluster settle."""
    sim.heal()
    sim.armed.clear()
    sim.clock_ms = dict.fromkeys(sim.ids, 0)
    sim.drop_rate = 0.0
    sim.delay_ms = (sim.settings.min_delay_ms, sim.settings.max_delay_ms)
    for node in sim.ids:
        sim.resume(node)
        sim.start(node)
    sim.run(duration_ms)
