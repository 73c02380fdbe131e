"""The seam between splitbrain and a system under test: what every target
implements, and all that the harness, nemeses, workloads, checkers and
results may know of one. It is Jepsen's split of DB, Client and Process: the
target says how to prepare and start a node and how to talk to it; the
backend (local processes, Docker, SSH) says where the node runs; so N
backends and M targets cost N + M.

A target is found by name in the registry (`targets.get`), never imported
by its own package outside `targets/`. Its module must import without its
client's packages (`Target.python_packages`): the set-up reads the
declarations to learn what to install.
"""

from __future__ import annotations

import copy
import os
import shutil
import subprocess
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from targets.options import Option

if TYPE_CHECKING:  # an SSH host's node programs import this module with targets/ alone: releases needs checkers
    from history.operations import NemesisOp
    from targets.releases import Releases


@dataclass(frozen=True)
class Capabilities:
    """What the checkers may rely on, written to run.json with each run.

    - `ok_proves_leadership`: an `ok` reply comes from the node that led the
      reply's epoch (the reference quorum; not etcd, whose followers forward
      proposals and answer themselves).
    - `generations`: statuses and events carry the node's life (KIP-380).
    - `voter_changes`: the target takes AddRaftVoter/RemoveRaftVoter-style
      membership operations (it implements `VoterChanges`).
    - `member_changes`: members are added as learners, promoted and removed
      (it implements `MemberChanges`, as etcd does); a wiped member comes back only by
      its removal and a new member's addition, never as itself.
    - `replica_changes`: the workload's replicated object (a stream) is
      scaled to fewer replicas and back, as an operator edits its replica
      count (it implements `ReplicaChanges`, as NATS does): the servers stay
      up and in the cluster, and the system chooses which replicas go and
      where the new ones come.
    - `peer_routes`: a node dials each peer at an address the harness
      chooses (so one directed link can go through its own proxy). etcd's
      members all dial the one peer URL a member advertises: its links are
      cut with iptables (Docker), or per pair by a front that names each
      connection's source (local: harness/attributed_links.py).
    - `lazy_disks`: the node's data directory can sit on the lose-unfsynced
      filesystem (harness/lazyfs.py): reads, writes, fsyncs, preallocation,
      read-only memory maps, the kernel's file locks.
    - `clock_faults`: the node reads the clock through libc, so libfaketime
      (harness/faketime.py) can move it. Go programs (etcd) read it through
      the vDSO, out of libfaketime's reach.
    - `data_files`: the node's files by kind, each a glob in its data
      directory (the last match is the newest): `log` (its replicated log,
      whose tail `corrupt` damages, as a torn write would), and any of
      `blocks` (stored data), `snapshots` and `metadata` (term, vote, peers),
      where `corrupt` flips a bit or cuts the file anywhere. What the node
      then does (refuse to start, cut the log back, lose data) is the
      target's to document, and the checkers' to judge.
    - `transitions_name_vote`: the node's logged state transitions name its
      vote in their epoch (null: none), from its start on, so a vote that
      vanishes in the same epoch (a restart that forgot it) is seen. etcd's
      "became follower at term T" lines name none.
    - `steady_leaders`: a leader steps down only when something happened to
      it: a majority stopped fetching (check-quorum), a later epoch began,
      or it was removed, stopped or cut off. With every node up and every
      link whole it leads on, so one that steps down then is a liveness bug
      (`progress`' `unprovoked-step-down`). Declared where that was
      measured to hold on correct runs under load.
    - `recovers`: once every fault is healed, with every node running and
      answering, the cluster agrees on a leader and its copies meet within
      the target's `settle_s`. One that does not has lost liveness for
      good (a replica that never catches up, elections that never end):
      `progress`' `no-recovery`. Undeclared, such a run is judged
      `unknown`, its final copies unread. Declared where correct runs under
      the default faults were measured to settle so.
    - `framing`: how the node's peer traffic splits into messages, as the
      dotted name of a module of the target's (standard library only: the
      link proxy imports it, in the bare node image too) whose
      `split(buffer)` returns the whole messages at the buffer's front,
      each `(bytes, kind, fields)` with `kind` from history/messages.py,
      and the rest, and whose `KINDS` maps each type of message to its
      kind. "" (none): the target's links take no message faults.
    """

    ok_proves_leadership: bool
    generations: bool
    voter_changes: bool
    workloads: tuple[str, ...]
    peer_routes: bool = True
    member_changes: bool = False
    replica_changes: bool = False
    lazy_disks: bool = False
    clock_faults: bool = False
    data_files: tuple[tuple[str, str], ...] = ()
    transitions_name_vote: bool = False
    framing: str = ""
    steady_leaders: bool = False
    recovers: bool = False

    def as_json(self) -> dict:
        return {**asdict(self), "workloads": list(self.workloads), "data_files": dict(self.data_files)}


@dataclass(frozen=True)
class NodeSpec:
    """One node as a backend lays it out: where its data and event log are,
    where it listens, where the others reach it (`raft_address`,
    `client_address`), and where it dials each peer (a link proxy, or the
    peer itself)."""

    node: str
    data_dir: str
    event_log: str
    raft_listen: str
    client_listen: str
    peers: dict[str, str]
    raft_address: str = ""
    client_address: str = ""
    # A node joining a running cluster (added as a member first): every
    # member's raft address, itself included. None: it starts with the cluster.
    members: dict[str, str] | None = None
    # Where the node listens for each further listener its target declares
    # (`Target.listeners`: an HTTP monitor, say), as HOST:PORT.
    listen: dict[str, str] = field(default_factory=dict)


class Address(tuple):
    """Where the harness reaches a node: its client (host, port), used as
    that tuple, with `listeners`, the (host, port) at which the harness
    reaches each further listener the target declares."""

    listeners: dict[str, tuple[str, int]]

    def __new__(cls, host: str, port: int, listeners: dict[str, tuple[str, int]] | None = None) -> Address:
        address = super().__new__(cls, (host, port))
        address.listeners = dict(listeners or {})
        return address


class TargetClient(ABC):
    """One client connection to one node (asyncio)."""

    @abstractmethod
    async def invoke(self, f: str, key: str | None, value: object, timeout_s: float) -> dict:
        """Perform one workload operation; returns the completion's fields:
        `type` (`ok`, `fail` when it definitely did not happen, `info` when
        unknown), and any of `value`, `epoch`, `leader`, `offset`, `error`.
        The target decides which errors are definite. A timeout or a lost
        connection raises (the harness records `info`)."""

    @abstractmethod
    async def close(self) -> None:
        """Close the connection; a connection that broke may raise OSError or
        a TargetError (the harness closes quietly then), nothing else."""


class Target(ABC):
    """A system under test."""

    name: str
    capabilities: Capabilities
    # The settings a run may give this target (targets/options.py): the
    # command line's flags and campaign files' keys come from these.
    options: tuple[Option, ...] = ()
    # Debian packages the node image must hold for this target (the set-up
    # installs them on this machine too, for the local backend).
    image_packages: tuple[str, ...] = ()
    # Python packages the harness needs to talk to it (its client library),
    # as pip requirements; the set-up installs them at constraints.txt's versions.
    python_packages: tuple[str, ...] = ()
    # Folders of this repository an SSH host needs (copied over SFTP).
    ssh_sources: tuple[str, ...] = ()
    # Seconds a healed cluster may take to agree on a leader and converge
    # (a target whose elections take seconds, as NATS's 4-9 s do, says more).
    settle_s: float = 20.0
    # Seconds after which a healed cluster whose nodes all answer with high
    # watermarks that stay apart and unmoving has settled apart (a replica
    # that no longer catches up, copies that split), its copies judged as
    # they are; None: it has not settled until they meet. Only for a target
    # whose copies hold nothing a later catch-up would take back.
    settled_apart_s: float | None = None
    # Ports a node listens on besides its raft and client ones (an HTTP
    # monitor): each backend gives every node one per name, passes it in
    # `NodeSpec.listen`, and hands the target its address in `Address.listeners`.
    listeners: tuple[str, ...] = ()
    # The file of `nodes/<node>/` that `log_events` reads: the node's own
    # event log, or `node.log` (its output) where the target logs there.
    log_file: str = "events.jsonl"
    # Where the `append` workload goes: 0, the target's one log (offsets are
    # log offsets); N, N lists by key (offsets are places in a key's list).
    append_keys: int = 0
    # The program a node runs: its name on PATH (Debian's package), unless
    # `at` chose a release's (`releases`: targets/releases.py) or a user's build.
    server: str = ""
    releases: Releases | None = None
    server_file: Path | None = None  # chosen by `at`
    release: str | None = None  # chosen by `at`

    def at(self, where: str) -> Target:
        """This target with its server at a release (`2.12.1`: fetched and
        checked at first use) or a file (`/abs/path`: a user's build, which
        must answer `--version` as this target's server does). Raises
        ReleaseError saying why not, in one line."""
        from targets.releases import ReleaseError

        if where.startswith("/"):
            file = Path(where)
            if not file.is_file() or not os.access(file, os.X_OK):
                raise ReleaseError(f"{file}: not an executable file")
            version = self.version_of(_version_output(file))
            if version is None:
                raise ReleaseError(f"{file}: not {self.name}'s server ({self.server} --version says otherwise)")
        else:
            if self.releases is None:
                raise ReleaseError(f"{self.name} has no releases but its own; name none (--target {self.name})")
            file, version = self.releases.server(where), where
        chosen = copy.copy(self)
        chosen.server_file, chosen.release = file, version
        return chosen

    def program(self) -> str:
        """The server as a node's command line names it."""
        return str(self.server_file) if self.server_file is not None else self.server

    def version_of(self, output: str) -> str | None:
        """The version the server's `--version` printed; None where it is not this target's server."""
        return None

    def server_versions(self) -> dict[str, str]:
        """The server's version as it says it (for run.json), with the file's
        sha256 where a release or a build of the user's was chosen."""
        if not self.server:  # a program of splitbrain's own (the reference quorum)
            return {}
        program = self.program() if self.server_file is not None else shutil.which(self.server)
        if program is None:
            return {self.server: "not installed on the harness machine"}
        version = self.version_of(_version_output(Path(program))) or "unknown"
        if self.server_file is None:
            return {self.server: version}
        from targets.releases import sha256_of

        return {
            self.server: version,
            f"{self.server}_file": str(program),
            f"{self.server}_sha256": sha256_of(Path(program)),
        }

    def election_timeout_ms(self, settings: dict) -> int:
        """How long a follower waits to hear its leader before it stands, with
        these settings: the scale brief faults are sized by (nemesis/faults/brief.py).
        A target whose options name it (`election_timeout_ms`) has it from
        there; one whose timeout is fixed says so."""
        return int(settings.get("election_timeout_ms", 1000))

    def declared(self, settings: dict) -> dict:
        """What a run with these settings keeps as its target's capabilities
        (run.json; the checkers read them): the declared ones, and the time
        it elects a leader within."""
        return {**self.capabilities.as_json(), "elects_within_ms": self.elects_within_ms(settings)}

    def elects_within_ms(self, settings: dict) -> int | None:
        """With these settings, the longest a correct cluster stands with a
        majority of its nodes up and heard by one another and none of them
        leading (availability's `stuck`): a leader lost while the rest are
        whole is replaced within it. A run's cluster stuck longer fails
        `progress` (`stuck`). None: not declared; declare it only where
        correct runs under the default faults were measured within it."""
        return None

    # ------------------------------------------------------------------ options

    @abstractmethod
    def node_args(self, settings: dict) -> tuple[str, ...]:
        """The node's command-line options from a run's settings: every
        option `options` declares, each valid by its declaration. Raises
        history.errors.SettingError for settings that do not go together."""

    def versions(self) -> dict[str, str]:
        """Versions of the target's software, for run.json."""
        return {}

    # ------------------------------------------------------------------ nodes

    @abstractmethod
    def new_directory_id(self) -> str:
        """A fresh identity for a data directory (a replaced disk gets a new one)."""

    @abstractmethod
    def format(self, data_dir: Path, directory_id: str, bootstrap: tuple[tuple[str, str], ...]) -> None:
        """Prepare a node's data directory on this machine before its first
        start; `bootstrap` names the initial voters as (node, directory id),
        empty for a node that starts outside the voter set."""

    @abstractmethod
    def format_command(
        self, python: str, node: str, data_dir: str, directory_id: str, bootstrap: tuple[tuple[str, str], ...]
    ) -> list[str]:
        """The same, as a command to run on another host."""

    @abstractmethod
    def command(self, python: str, spec: NodeSpec, options: tuple[str, ...]) -> list[str]:
        """The node's command line (`python` is the interpreter there)."""

    # ------------------------------------------------------------------ clients and observation

    @abstractmethod
    async def connect(self, address: tuple[str, int], timeout_s: float, settings: dict) -> TargetClient:
        """A client of the node at `address`; `settings` are the run's, as
        for `node_args` (a client option such as reads answered by any
        member). Raises OSError when it cannot connect."""

    @abstractmethod
    def status(self, address: tuple[str, int], timeout_s: float) -> dict | None:
        """A node's status (`node`, `state`, `epoch`, `leader`, `hwm`, and
        what else it reports), or None when it does not answer."""

    @abstractmethod
    def status_event(self, status: dict, time_ns: int) -> dict:
        """A status as a row of the events table."""

    @abstractmethod
    def log_events(self, path: Path, to_run_ns) -> list[dict]:
        """A node's log, collected into the run directory, as events rows
        (`to_run_ns` turns the log's wall-clock nanoseconds into the run's clock)."""

    def log_reader(self, path: Path, to_run_ns) -> Callable[[], list[dict]]:
        """What reads a node's log as it is written (`run --check-live`): each
        call, the events rows logged since the last. Here the whole log is
        read again each time, as `log_events` reads it, and the rows past
        those still as they were given are given (a log of elections only
        stays short; one whose end a disk lost is read on from what stayed);
        a target whose log grows with the load reads only its new lines."""
        given: list[dict] = []

        def read() -> list[dict]:
            rows = self.log_events(path, to_run_ns)
            same = 0
            while same < min(len(rows), len(given)) and rows[same] == given[same]:
                same += 1
            given[:] = rows
            return rows[same:]

        return read

    def line_wall_ns(self, line: str) -> int | None:
        """When a line of the node's log (`log_file`) was written, in
        wall-clock nanoseconds, or None for a line that carries no time (a
        continuation); the report shows the lines of an anomaly's moment."""
        return None

    @abstractmethod
    def final_rows(self, node: str, address: tuple[str, int], files: Callable[[str], Path]) -> list[dict]:
        """The node's committed log at the end, as rows of the final table:
        read from the node (`address`) or from its files, whichever is its own
        copy (`files(part)`: that part of its data directory as it is now,
        readable on this machine, wherever the node runs)."""

    def prepare_workload(self, workload: str, address: tuple[str, int], settings: dict, timeout_s: float) -> None:  # noqa: B027
        """Make what `workload` writes to (a stream, a bucket), once, through
        the node at `address`, after the cluster has a leader and before load;
        clients never make it again, so one that vanishes under faults shows
        as operations on nothing. Raises ClusterError when it cannot within
        `timeout_s`. Most targets need nothing made."""

    def __init_subclass__(cls, **kwargs) -> None:
        """A capability is declared exactly where its ability is implemented."""
        super().__init_subclass__(**kwargs)
        declared = getattr(cls, "capabilities", None)
        for ability, flag in (
            (VoterChanges, "voter_changes"),
            (MemberChanges, "member_changes"),
            (ReplicaChanges, "replica_changes"),
        ):
            if declared is not None and getattr(declared, flag) != issubclass(cls, ability):
                from history.errors import Defect  # here: SSH hosts' nodes import this module with targets/ alone

                raise Defect(
                    f"{cls.__name__}: capabilities.{flag} is {getattr(declared, flag)}, "
                    f"but it {'does not subclass' if getattr(declared, flag) else 'subclasses'} {ability.__name__}"
                )


# ---------------------------------------------------------------------- optional abilities
# Small protocols a target takes on beside `Target` (Jepsen's Kill, Pause,
# Primary): the harness asks for one only of a target that implements it.


class VoterChanges(ABC):
    """AddRaftVoter/RemoveRaftVoter-style membership (`capabilities.voter_changes`)."""

    @abstractmethod
    def change_voters(self, address: tuple[str, int], changes: list[dict], timeout_s: float) -> list[dict | None]:
        """Send voter changes together to a node; an answer per change (None: no answer)."""


class MemberChanges(ABC):
    """Members added as learners, promoted and removed (`capabilities.member_changes`)."""

    @abstractmethod
    def members(self, address: tuple[str, int], timeout_s: float) -> list[dict] | None:
        """The member list as the node at `address` knows it: each member's
        `id`, `name` (empty until it has started), `peer` (raft address) and
        `learner`; None if it does not answer."""

    @abstractmethod
    def change_members(self, address: tuple[str, int], change: dict, timeout_s: float) -> dict | None:
        """One member change (`op`: `add-learner` with `peer`, `promote` or
        `remove` with `id`) sent to the node at `address`: the answer's
        `epoch` and `id`, or its `error` (the change was refused); None: no
        answer (it may have been made)."""


class ReplicaChanges(ABC):
    """The workload's stream scaled down and up (`capabilities.replica_changes`)."""

    @abstractmethod
    def change_replicas(self, address: tuple[str, int], workload: str, replicas: int, timeout_s: float) -> dict | None:
        """Ask the node at `address` for `replicas` replicas of `workload`'s
        stream: the answer's `peers` (the nodes that now hold a replica, as
        the system chose them), or its `error` (refused); None: no answer
        (it may have been made)."""

    @abstractmethod
    def current_replicas(self, address: tuple[str, int], workload: str, timeout_s: float) -> list[str] | None:
        """The nodes whose replica of `workload`'s stream is current, as the
        node at `address` reports it: the leader first, then the replicas
        caught up with it; none without a leader; None: no answer. What an
        operator waits for before the next change."""


class RealSchedule(NamedTuple):
    """A simulated violation as a real run: its nemesis operations (`at_s`
    from the start of load, `f`, `args`), the time limit they need, the
    workload whose checkers see what broke, and the target options its nodes
    take beside simulate's (their timeouts, where the real ones must differ)."""

    ops: list[dict]
    limit_s: float
    workload: str
    options: dict


class SimulatedCluster(Protocol):
    """A simulated cluster as the nemesis makes its faults on it
    (nemesis/simulated.py), in simulated milliseconds: its nodes, who leads,
    what each live node says, and the simulation's own steps. `cut`: the
    directed links cut now (changed in place); `paused`: the paused nodes;
    `ops`: the nemesis operations made on it, with their moments (what a
    violation is reported with); `voters`: how many of `ids` vote;
    `timeout_ms`: its election timeout; `loses_unflushed`: whether its
    nodes flush on an interval, so that a power loss loses what they had
    not (the nemesis may make one)."""

    ids: tuple[str, ...]
    voters: int
    ops: list[NemesisOp]
    timeout_ms: int
    loses_unflushed: bool

    @property
    def cut(self) -> set[tuple[str, str]]: ...

    @property
    def paused(self) -> set[str]: ...

    def leader(self) -> str | None: ...

    def states(self) -> dict[str, str]:
        """Each live node's state (not down, not paused)."""

    def status_rows(self) -> dict[str, dict[str, Any]]:
        """Each live node's status as an events row: state, epoch, offset, synced, hwm."""

    def down(self) -> list[str]:
        """The nodes crashed and not started since, in `ids`' order."""

    def run(self, ms: int) -> None:
        """The cluster and its load `ms` on; a broken invariant raises."""

    def pause(self, node: str) -> None: ...

    def resume(self, node: str) -> None: ...

    def crash(self, node: str, lose_unsynced: bool = False) -> None: ...

    def start(self, node: str) -> None: ...

    def heal(self) -> None:
        """Every link whole."""

    def set_clock(self, node: str, offset_ms: int) -> None: ...


class SimulatedSearch(Protocol):
    """A strategy that chooses a simulated schedule's faults as it goes, as
    the shell hands it to a simulation (nemesis/simulated.py's
    `NoveltySearch`), learning across schedules: `play` makes one schedule
    of it on a cluster, seeded, choosing `steps_per_interval` times an
    interval from the faults the nemesis makes on a simulation."""

    name: str
    steps_per_interval: int

    def play(self, cluster: SimulatedCluster, seed: int, interval_s: float, limit_s: float) -> None: ...


class Simulated(ABC):
    """A deterministic simulation of the target (`splitbrain simulate`)."""

    @abstractmethod
    def simulate(
        self,
        settings: dict,
        schedules: int,
        steps: int,
        seed: int,
        membership: bool,
        keep_going: bool,
        progress,
        search: SimulatedSearch | None = None,
        moments: bool = False,
    ) -> dict:
        """Seeded fault schedules over the simulation, random or chosen by
        `search` (the shell's strategy, which keeps what it learns): a
        verdict. With `moments`, random schedules also arm faults for a
        moment of the protocol (a leader's election, its commit)."""

    @abstractmethod
    def real_schedule(self, settings: dict, violation: dict) -> RealSchedule:
        """A violation the simulation found (its `steps` and what broke) as a
        real run: what `simulate --write-schedules` hands `replay`."""

    @abstractmethod
    def steadiness(self, settings: dict, violation: dict) -> tuple[int, int] | None:
        """Under how many of how many other timings (a seed's message delays
        and timeouts) the violation's schedule breaks the same way again; None
        for one it cannot run under another (a search's, chosen as it went).
        A real cluster keeps no seed's timing: a violation that broke under
        its own seed alone turned on a delay a replay will not repeat (among
        those that break again, it did not rank them: docs/simulator.md)."""


class Mutable(ABC):
    """Source the target lets `splitbrain mutate` change, to measure what the harness catches."""

    @abstractmethod
    def mutation_sources(self) -> dict[str, bool]:
        """Files to mutate (paths from the project's root), each with whether
        the target's simulation runs it (then a mutant the simulation cannot
        tell from the original is equivalent)."""


class OwnCommands(ABC):
    """Commands the target brings (`splitbrain node`)."""

    @abstractmethod
    def main(self, command: str, argv: list[str]) -> int:
        """Run one of them: its exit code."""


def _version_output(file: Path) -> str:
    """What `FILE --version` prints (stdout and stderr), "" where it cannot run."""
    try:
        done = subprocess.run([str(file), "--version"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout + done.stderr
