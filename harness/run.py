"""`splitbrain run`: bring a cluster up behind the link mesh, drive client
load while the nemesis schedule runs, heal, collect, check, and write the run
directory (docs/organisation.md). Every exit path, Ctrl-C included, heals the faults and
tears down what the run started; the history written so far stays usable.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import json
import os
import random
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import pandas as pd
from tqdm import tqdm

import targets
from checkers.progress import LULL, LULL_SAID, NO_LEADER, UNSETTLED
from harness import crash, faketime
from harness.backends import bring_up
from harness.cluster import DEFAULT_TARGET, node_ids
from harness.interrupts import cancelled_on_termination, ended, shielded
from harness.limits import LULL_FROM_S, LULL_S, RUN_SETTINGS, named_twice, schedule_problem
from harness.live import Live
from harness.soak import Soak
from history.errors import (
    ClusterError,
    HistoryError,
    NoAgreedLeader,
    SettingError,
    TargetError,
    Unsettled,
    UsageError,
)
from history.faults import (
    BEFORE_START,
    BY_NAME,
    BY_PROXY,
    CLOCK,
    HEAL_ALL,
    KILL,
    KINDS,
    ON_MESSAGES,
    PARTITION,
    PAUSE,
    RANDOM_DEFAULT,
    START_OBSERVERS,
    of_kind,
)
from history.observation import Observation
from history.operations import NemesisOp
from history.schema import EVENTS_COLUMNS, FINAL_COLUMNS, frame, holds
from nemesis import LEARNING, STRATEGIES
from nemesis.executor import Nemesis
from nemesis.faults import messages
from nemesis.guided import GUIDED_FAULTS, read_tried, repaired
from nemesis.novelty import Memory
from nemesis.schedule import TOPOLOGIES, generate
from nemesis.strategy import Fixed, Setting, Strategy, made
from nemesis.topologies import two_way
from results.recording import HistoryRecorder, partial, recover
from results.versions import recorded
from targets import options as target_options
from targets.interface import Target, TargetClient
from workloads.generators import WORKLOADS, Operation, make_workload

QUIESCE_TIMEOUT_S = 20.0
LINK_FAULTS = set(of_kind("link"))
GUIDED_DEFAULT = tuple(f for f in GUIDED_FAULTS if not BY_NAME[f].reshapes and BY_NAME[f].by_default)
CHOICES = {
    "backend": ("local", "docker", "ssh"),
    "net": ("proxy", "iptables"),
    "workload": tuple(WORKLOADS),
    "nemesis_strategy": STRATEGIES,
}


# What the novelty search learned in a run, in its run directory.
MEMORY_FILE = "novelty.json"

# How often the probe looks for nodes that exited on their own (a poll of every process or container).
EXIT_CHECK_S = 1.0
# Threads for the probes, the nemesis and the live checks, beside one per client.
THREADS_BESIDE_CLIENTS = 4
# While load runs, history rows are flushed together at most this long after they are recorded.
HISTORY_FLUSH_S = 0.01
# A client call is given up on after this many operation timeouts (and a second): Run.backstop_s.
BACKSTOP_REQUESTS = 3


def unless_none(**settings: Any) -> dict[str, Any]:
    """The settings given: a RunConfig works out those left None itself."""
    return {name: value for name, value in settings.items() if value is not None}


@dataclass
class RunConfig:
    """One run's settings, as `splitbrain run`, a campaign file and run.json
    name them, in four groups: the cluster, the load, the faults, and where
    the output goes. Flat, so run.json's `config` stays one object that
    `replay` reads back (`from_json`); `validate` refuses a setting before
    anything is made, as a SettingError naming it."""

    # ---- the cluster
    target: str = DEFAULT_TARGET
    backend: str = "local"
    nodes: int = 3
    # The target's own options as given (targets/options.py; the declared
    # defaults stand for the rest): bugs, pre_vote, read_lease_ms, ...
    options: dict = field(default_factory=dict)
    # Membership: how many nodes bootstrap the voter set (None: all; 1: standalone),
    # and how many voters are down while the others join.
    initial_voters: int | None = None
    down_at_join: int = 0
    hosts: Path | None = None
    # How links are cut: link proxies, or iptables (Docker); None: what the
    # target can take (`default_net`, set by __post_init__), stated in run.json's config.
    net: str = None  # type: ignore[assignment]
    toxiproxy: str | None = None
    probe_interval_s: float = 0.2

    # ---- the load
    workload: str = "append"
    time_limit_s: float = 20.0
    # The run's last seconds, within the time limit (the lull): every fault healed and no client calls,
    # the nodes watched. None: LULL_S where the time limit is at least LULL_FROM_S, else none (set by
    # __post_init__, so run.json states it).
    lull_s: float = None  # type: ignore[assignment]
    rate: float = 50.0
    concurrency: int = 4
    op_timeout_s: float = 1.0
    seed: int = 0

    # ---- the faults
    # Not given (None): the strategy's default (`default_nemesis`), set by
    # __post_init__, so a run always holds its list; `unless_none` leaves it out.
    nemesis: list[str] = None  # type: ignore[assignment]
    interval_s: float = 3.0
    topologies: list[str] | None = None
    # `guided` (the default, as it finds every planted bug sooner): each fault
    # chosen when its turn comes, for the coverage cells least tried
    # (nemesis/guided.py), counting those in `coverage_file` (a campaign's);
    # `random`: a schedule drawn from the seed before the run.
    # `novelty`: each step chosen for the cluster states it leads to
    # (nemesis/novelty.py), learning across a campaign in `memory_file`;
    # `novelty-priors`: with the guided nemesis's risk tables and recipes.
    nemesis_strategy: str = "guided"
    coverage_file: Path | None = None
    memory_file: Path | None = None
    # A schedule to run as it is (`replay`): ops with `at_s` from the start of
    # load; a lasting link fault at a negative `at_s` is made before the nodes start.
    schedule: list[dict] | None = None

    # ---- the output
    results: Path = Path("runs")
    progress: bool = True
    # A campaign names its runs so that a resumed campaign finds them; alone, a run gets a fresh id.
    run_id: str | None = None
    # The campaign's name for this run's option set ([targets.NAME]); listings and analyze show it.
    option_set: str | None = None
    # Judge the run while it goes (harness/live.py); and end its load at the first violation found so.
    check_live: bool = False
    stop_on_violation: bool = False
    # A soak (`splitbrain soak`, harness/soak.py): judged live, its progress sampled this often into soak.html.
    soak_sample_s: float | None = None

    def __post_init__(self) -> None:
        """What was not given: the faults and the way links are cut that the
        strategy, target and backend call for."""
        if self.nemesis is None:
            self.nemesis = self.default_nemesis()
        if self.net is None:
            self.net = self.default_net()
        if self.lull_s is None:
            self.lull_s = self.default_lull()

    def default_lull(self) -> float:
        """LULL_S where the time limit is at least LULL_FROM_S, else none; none
        where a schedule is given (its time is all its own: a replay states
        its run's lull), or the time limit is no number (`validate` names it)."""
        limit = self.time_limit_s
        long_enough = isinstance(limit, (int, float)) and limit >= LULL_FROM_S
        return LULL_S if long_enough and self.schedule is None else 0.0

    @property
    def load_s(self) -> float:
        """Seconds of load and faults: the time limit but the lull."""
        return self.time_limit_s - self.lull_s

    def default_net(self) -> str:
        """iptables on Docker where the target's members dial one advertised
        peer URL each (no per-link routes), so no proxy can stand in one
        link's way; else link proxies, where each directed link has its own."""
        known = targets.known(self.target)
        if self.backend == "docker" and known and not targets.get(self.target).capabilities.peer_routes:
            return "iptables"
        return "proxy"

    def default_nemesis(self) -> list[str]:
        """The faults a run draws from when none are named. Random: partition,
        kill, pause, as ever. Guided: every fault it aims that this target and
        backend take (it is for finding bugs without knowing where they are),
        but lost disks and voter changes, which change the cluster's shape and
        are named when wanted."""
        if self.nemesis_strategy == "random" or not targets.known(self.target):
            return list(RANDOM_DEFAULT)
        return [kind for kind in GUIDED_DEFAULT if self.takes(kind)]

    def election_timeout_ms(self) -> int:
        """The target's election timeout with this run's settings (brief faults are sized by it)."""
        return targets.get(self.target).election_timeout_ms(self.settings())

    def takes(self, kind: str) -> bool:
        """Whether this run's target, on its backend, takes the fault `kind`."""
        try:
            replace(self, nemesis=[kind])._check_capabilities(targets.get(self.target))
        except SettingError:
            return False
        return True

    def settings(self) -> dict:
        """Every option of the target: as given, else its declared default."""
        return target_options.settings(targets.get(self.target).options, self.options)

    @classmethod
    def from_json(cls, data: dict) -> RunConfig:
        """The settings run.json recorded (as `asdict` wrote them); names this
        version does not know are left out. Runs recorded before targets
        declared their options kept them beside the others: they are the
        target's options again."""
        known = {f.name for f in fields(cls)}
        values = {name: value for name, value in data.items() if name in known}
        if "options" not in data and targets.known(str(data.get("target", DEFAULT_TARGET))):
            declared = {option.name for option in targets.get(data.get("target", DEFAULT_TARGET)).options}
            values["options"] = {name: value for name, value in data.items() if name in declared}
        values.setdefault("lull_s", 0.0)  # (runs recorded before the lull had none)
        for name in ("results", "hosts", "coverage_file", "memory_file"):
            if values.get(name) is not None:
                values[name] = Path(values[name])
        return cls(**values)

    def schedule_topologies(self) -> list[str] | None:
        """What partitions draw from: the topologies asked for; else, where
        links are cut per pair (a target without per-link routes, on the
        local backend), every two-way one; else all that fit (None)."""
        if self.topologies or self.backend != "local" or targets.get(self.target).capabilities.peer_routes:
            return self.topologies
        if PARTITION not in self.nemesis:  # (and no topology cuts the links of one node)
            return None
        nodes = list(node_ids(self.nodes))
        return [t for t in TOPOLOGIES if (t != "flip-flop" or self.nodes == 5) and two_way(t, nodes)]

    def validate(self) -> None:
        """Raise SettingError naming the first setting out of its range or
        choices (as RunConfig names it), before anything is written."""
        self._check_values()
        target = targets.get(self.target)
        self._check_target(target)
        self._check_capabilities(target)
        self._check_shape()
        self._check_messages(messages.framed_kinds(target.capabilities.framing))

    def _check_values(self) -> None:
        """Each setting within its range, among its choices, of its type."""
        for name, allowed in RUN_SETTINGS.items():
            value = getattr(self, name)
            if value is None and name in ("initial_voters", "soak_sample_s"):
                continue
            problem = allowed.problem(value)
            if problem:
                raise SettingError(name, problem)
        if self.lull_s >= self.time_limit_s:
            raise SettingError("lull_s", f"{self.lull_s:g} must be under the time limit ({self.time_limit_s:g} s)")
        for name, choices in CHOICES.items():
            if getattr(self, name) not in choices:
                raise SettingError(name, f"{getattr(self, name)!r} is not one of {', '.join(choices)}")
        for name in ("progress", "check_live", "stop_on_violation"):
            if not isinstance(getattr(self, name), bool):
                raise SettingError(name, f"must be true or false, not {getattr(self, name)!r}")
        for name in ("nemesis", "topologies"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, list) or not all(isinstance(v, str) for v in value)):
                raise SettingError(name, f"must be a list of names, not {value!r}")
            twice = named_twice(value or [])
            if twice:
                raise SettingError(name, f"{', '.join(twice)} named more than once")
        if not isinstance(self.target, str) or not targets.known(self.target):
            raise SettingError("target", f"{self.target!r} is not one of {', '.join(targets.names())}")
        unknown = sorted(set(self.nemesis) - set(KINDS))
        if unknown:
            raise SettingError("nemesis", f"unknown faults {', '.join(unknown)}; known: {', '.join(KINDS)}")

    def _check_target(self, target: Target) -> None:
        """The target's options, its workloads, and the arguments its nodes take."""
        if not isinstance(self.options, dict):
            raise SettingError("options", f"must be a table of the target's options, not {self.options!r}")
        refused = target_options.refusal(target.name, target.options, self.options, keys=True)
        if refused:
            raise SettingError(*refused)
        if self.workload not in target.capabilities.workloads:
            raise SettingError(
                "workload", f"{target.name} runs {', '.join(target.capabilities.workloads)}, not {self.workload}"
            )
        try:
            self.node_args()
        except SettingError as error:
            raise SettingError(error.setting, f"{error.reason} ({target.name})") from None

    def _check_shape(self) -> None:
        """The voters, a schedule given, and the faults the strategy can make in the time."""
        if self.hosts is not None and self.backend != "ssh":  # (it was taken and ignored: the run went local)
            raise SettingError("hosts", f"a hosts file is for the ssh backend, not {self.backend}")
        voters = self.nodes if self.initial_voters is None else self.initial_voters
        if voters > self.nodes:
            raise SettingError("initial_voters", f"must be between 1 and nodes ({self.nodes}), not {voters}")
        if self.down_at_join >= voters:
            raise SettingError(
                "down_at_join", f"must be fewer than the {voters} initial voters, not {self.down_at_join}"
            )
        for op in self.schedule or []:
            if not (
                isinstance(op, dict)
                and isinstance(op.get("f"), str)
                and isinstance(op.get("at_s"), (int, float))
                and op["at_s"] <= self.load_s
                and isinstance(op.get("args", {}), dict)
            ):
                raise SettingError(
                    "schedule",
                    f"every operation needs f, args and at_s within the time limit (before its lull), not {op!r}",
                )
            if op["at_s"] < 0 and op["f"] not in BEFORE_START:
                raise SettingError(
                    "schedule",
                    f"only a lasting link fault ({', '.join(BEFORE_START)}) is made before the nodes start "
                    f"(a negative at_s), not {op['f']}",
                )
        unguided = sorted(set(self.nemesis) - set(GUIDED_FAULTS))
        if self.nemesis_strategy != "random" and unguided:
            raise SettingError(
                "nemesis",
                f"the {self.nemesis_strategy} strategy aims {', '.join(GUIDED_FAULTS)}, not {', '.join(unguided)} "
                f"(--nemesis-strategy random draws {', '.join(unguided)})",
            )
        problem = schedule_problem(self.time_limit_s, self.interval_s)
        if problem:
            raise SettingError("interval_s", problem)
        generate(random.Random(0), self.nemesis, 0, 1, self.nodes, self.schedule_topologies())

    def _check_capabilities(self, target) -> None:
        """Faults and settings the target cannot take are refused before the run."""
        capabilities = target.capabilities
        links = sorted(LINK_FAULTS & set(self.nemesis))
        if links and self.nodes < 2:
            raise SettingError("nemesis", f"{', '.join(links)} acts on the links between nodes, and one node has none")
        toxics = [kind for kind in self.nemesis if kind in BY_PROXY]
        if self.net == "iptables" and toxics:
            raise SettingError("nemesis", f"{', '.join(toxics)} needs the link proxies, not iptables")
        framed = sorted(ON_MESSAGES & set(self.nemesis))
        if framed and capabilities.framing and (self.net == "iptables" or self.backend == "ssh"):
            where = "local, or docker without --net iptables" if capabilities.peer_routes else "the local backend"
            raise SettingError("nemesis", f"{', '.join(framed)} need the link proxies splitbrain starts ({where})")
        if not capabilities.peer_routes:
            # Whatever the faults: a default nemesis narrowed to none that cut links would hide the refusal.
            if self.backend == "docker" and self.net != "iptables":
                raise SettingError(
                    "net",
                    f"{target.name}'s members dial one advertised peer URL each, so no link proxy "
                    "can stand in one link's way: cut links with iptables (leave --net out, or --net iptables)",
                )
            if self.backend == "ssh" and LINK_FAULTS & set(self.nemesis):
                raise SettingError(
                    "nemesis",
                    f"{target.name} cannot have its links cut on the ssh backend "
                    "(no per-link routes); use --backend docker --net iptables",
                )
            if self.backend == "local" and toxics:
                raise SettingError(
                    "nemesis",
                    f"{target.name}'s links on the local backend are cut per pair, "
                    f"and take no {', '.join(toxics)}; use --backend docker",
                )
            one_way = [t for t in self.topologies or () if not two_way(t, list(node_ids(self.nodes)))]
            if self.backend == "local" and PARTITION in self.nemesis and one_way:
                raise SettingError(
                    "topologies",
                    f"{', '.join(one_way)} cut links one way on {self.nodes} nodes, and "
                    f"{target.name}'s links on the local backend are cut per pair; use --backend docker --net iptables",
                )
        for fault in (BY_NAME[kind] for kind in self.nemesis):
            if fault.needs and not any(getattr(capabilities, need) for need in fault.needs):
                raise SettingError("nemesis", f"{target.name}{fault.refused}")
        on_this_machine = [kind for kind in self.nemesis if BY_NAME[kind].on_this_machine]
        if on_this_machine and self.backend == "ssh":
            raise SettingError("nemesis", f"{', '.join(on_this_machine)}: only on the local and docker backends")
        if CLOCK in self.nemesis and self.backend == "local" and not faketime.LIBRARY.exists():
            raise SettingError(
                "nemesis",
                f"clock needs Debian's libfaketime ({faketime.LIBRARY} is missing; scripts/bootstrap.sh installs it)",
            )
        if not capabilities.voter_changes and self.initial_voters not in (None, self.nodes):
            raise SettingError("initial_voters", f"{target.name} starts every node as a voter")

    def _check_messages(self, framed: tuple[str, ...]) -> None:
        """A schedule's message faults name only kinds and moments the target's framing shows."""
        for row, op in enumerate(self.schedule or [], 1):
            found = messages.problem(op.get("args", {}), framed) if op["f"] in ON_MESSAGES else None
            if found:
                raise SettingError("schedule", f"operation {row} ({op['f']}): {found}")

    def needs(self, capability: str) -> bool:
        """Whether a fault this run may make (a kind it draws, an operation
        its schedule names) takes the target's `capability`: what the
        backend must make ready (a filesystem, a clock, framed links)."""
        faults = [*self.nemesis, *(op["f"] for op in self.schedule or ())]
        return any(capability in BY_NAME[f].needs for f in faults if f in BY_NAME)

    def node_args(self) -> tuple[str, ...]:
        """The target's node options for this run's settings."""
        return targets.get(self.target).node_args(self.settings())


def git_revision() -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5, cwd=Path(__file__).parent
        )
    except OSError:
        return None
    return out.stdout.strip() or None


class Run:
    """One run from settings to run directory: the cluster brought up, load
    and faults together until the time limit, everything healed, the nodes'
    logs and final copies collected (`execute`); checking it is
    results/checking.py's."""

    def __init__(self, config: RunConfig) -> None:
        self.config = config
        self.target = targets.get(config.target)
        self.rng = random.Random(config.seed)
        self.run_id = self._name(config)
        # Written under a temporary name until it has its verdict (results.recording.complete).
        if (Path(config.results) / self.run_id).exists():
            raise UsageError(f"{Path(config.results) / self.run_id}: a run directory of that name exists")
        self.dir = partial(Path(config.results) / self.run_id)
        self.dir.mkdir(parents=True, exist_ok=False)
        crash.write_here(self.dir)
        live = config.check_live or config.stop_on_violation or config.soak_sample_s is not None
        self.recorder = HistoryRecorder(self.dir)
        self.events: list[dict] = []
        # Per node, what reads its own log as it is written (for the live checks).
        self.log_readers: dict[str, Callable[[], list[dict]]] = {}
        # Each node's state as its last answered status said (what the guided nemesis aims by).
        self.states: dict[str, str] = {}
        # Each node's last answered status as an events row, with its state (what the novelty search reads).
        self.rows: dict[str, dict[str, Any]] = {}
        # The nodes seen to have exited on their own (an `exited` event each, once).
        self.exits: set[str] = set()
        self.process_ids = itertools.count()
        # One generator for all clients, so values are unique across them.
        self.workload = make_workload(config.workload, random.Random(config.seed), self.target.append_keys)
        self.strategy = self._strategy(config)
        self.schedule = list(self.strategy.planned)  # (a deciding strategy's operations join it as decided)
        versions = self.target.versions()  # (the server answers --version, and a chosen one's file is hashed: once)
        self.meta: dict[str, Any] = {
            "config": {
                **{k: str(v) if isinstance(v, Path) else v for k, v in asdict(config).items()},
                "options": config.settings(),
            },
            "seed": config.seed,
            "target": self.target.name,
            # The server's release (`--target NAME@VERSION`) or the user's build (`--server-binary`); None: PATH's.
            "release": self.target.release,
            "capabilities": self.target.declared(config.settings()),
            "versions": {**recorded(), **versions},
            # The server's own version (campaign pages and analyze group by it).
            "server_version": versions.get(self.target.server) if self.target.server else None,
            "git_revision": git_revision(),
            "start_time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            # The wall clock when the history's clock read 0: places the nodes' log lines on it (report.html).
            "wall_start_ns": self.recorder.wall_start_ns,
            # Offsets from the start of load until it starts; then on the history's clock (see `clock_schedule`).
            "schedule": [asdict(op) for op in self.schedule],
        }
        self.write_meta()
        self.live = (
            Live(self.recorder, self.events, self.logged_since, self.meta["capabilities"], config.stop_on_violation)
            if live
            else None
        )
        self.soak = (
            Soak(self.dir, self.recorder, self.live, self.cluster_pids, asdict(config), config.soak_sample_s)
            if self.live is not None and config.soak_sample_s is not None
            else None
        )

    @staticmethod
    def _name(config: RunConfig) -> str:
        """The run's id, a campaign's or a fresh one whose folder name says what
        a person looks for: when, the workload, the names a list option holds
        (the bugs planted), the seed."""
        named = "".join(
            f"-{name}" for value in config.settings().values() if isinstance(value, list) for name in sorted(value)
        )
        stamp = time.strftime("%Y%m%dT%H%M%S")
        return config.run_id or f"{stamp}-{config.workload}{named}-s{config.seed}-{os.urandom(2).hex()}"

    @staticmethod
    def _strategy(config: RunConfig) -> Strategy:
        """Who decides the faults (nemesis/strategy.py): a replayed schedule,
        the random one drawn before the run, or the guided nemesis or the
        novelty search as the run goes (written down as decided)."""
        if config.schedule is not None:  # a replay: the faults another run made, at the same offsets
            return Fixed([NemesisOp(op["at_s"], op["f"], op.get("args") or {}) for op in config.schedule])
        setting = Setting(
            config.nemesis_strategy,
            config.seed,
            config.nemesis,
            config.load_s,
            config.interval_s,
            config.nodes,
            config.initial_voters or config.nodes,
            config.schedule_topologies(),
            config.election_timeout_ms(),
            messages.framed_kinds(targets.get(config.target).capabilities.framing),
            read_tried(config.coverage_file),
            Memory.read(config.memory_file) if config.nemesis_strategy in LEARNING else None,
        )
        return made(setting)

    def write_meta(self) -> None:
        (self.dir / "run.json").write_text(json.dumps(self.meta, indent=2) + "\n")

    def clock_schedule(self, load_start_s: float) -> None:
        """Once load starts, run.json's schedule is put on the history's clock
        (`time_ns` / 1e9), so a fault at `at_s` 9.0 is in the history at 9 s;
        `load_start_s` keeps the offsets a replay needs."""
        self.meta["load_start_s"] = round(load_start_s, 6)
        self.meta["schedule"] = [{**asdict(op), "at_s": round(load_start_s + op.at_s, 6)} for op in self.schedule]
        self.write_meta()

    # ------------------------------------------------------------------ phases

    def execute(self) -> None:
        """Up, load and faults, heal, quiesce, collect; teardown on every path."""
        config = self.config
        with contextlib.ExitStack() as stack:
            stack.callback(recover, self.dir)
            stack.callback(self.recorder.close)
            cluster, links = bring_up(
                stack,
                config.backend,
                self.dir,
                self.run_id,
                config.nodes,
                config.options,
                config.net,
                config.toxiproxy,
                config.hosts,
                config.initial_voters,
                target=config.target,
                lazy_disks=config.needs("lazy_disks"),
                clock_faults=config.needs("clock_faults"),
                framed=config.needs("framing"),
            )
            self.cluster = cluster
            self.nemesis = Nemesis(
                cluster,
                links,
                self.recorder,
                random.Random(config.seed),
                config.concurrency,
                workload=config.workload,
                settings=config.settings(),
            )
            started = self.start(cluster)
            try:
                if started:
                    asyncio.run(cancelled_on_termination(self.load_and_faults()))
            finally:
                with shielded():
                    self.finish(cluster)

    def start(self, cluster) -> bool:
        """The voters first; once they have a leader, `down_at_join` of them
        (never the leader) killed, then the observers started: KIP-1186's
        scenario when the observers auto-join. False where the cluster never
        came up because a node halted on an error of its own (its log says
        so), or its running nodes agreed on no leader (a `no-leader` event):
        findings, checked with no load, where any other failure to come up
        (a node that exited) raises."""
        if isinstance(self.strategy, Fixed):
            for op in self.strategy.before_start():
                self.nemesis.invoke(op)
        for node in cluster.voters:
            cluster.start(node)
        try:
            leader = cluster.wait_for_leader(QUIESCE_TIMEOUT_S)
        except ClusterError as error:
            if self.halted_on_its_own(cluster):
                print("splitbrain: a node halted on an error of its own before the cluster came up", file=sys.stderr)
                return False
            if not isinstance(error, NoAgreedLeader):
                raise
            self.said(NO_LEADER, str(error))
            print(f"splitbrain: the cluster came up with {error}: judged, with no load", file=sys.stderr)
            return False
        # What the workload writes to, made once before load (a stream, a bucket), where the target needs it.
        self.target.prepare_workload(
            self.config.workload, cluster.client[leader], self.config.settings(), QUIESCE_TIMEOUT_S
        )
        if self.config.down_at_join:
            leader = self.nemesis.leader()
            victims = [node for node in cluster.voters if node != leader][: self.config.down_at_join]
            self.nemesis.invoke(NemesisOp(0, KILL, {"nodes": victims}))
        if cluster.observers:
            self.nemesis.invoke(NemesisOp(0, START_OBSERVERS))
        return True

    def halted_on_its_own(self, cluster) -> bool:
        """Whether a node's own log says it halted (checkers/crashes.py)."""
        self.note_exits(cluster)
        cluster.collect(self.dir / "nodes")
        return any(holds(table["event"], ["halted"]).any() for table in self.node_log_tables(cluster))

    def finish(self, cluster) -> None:
        """Heal everything, let the cluster settle, read the final logs, collect."""
        self.note_exits(cluster)
        if self.nemesis.in_force:
            self.nemesis.invoke(NemesisOp(self.config.time_limit_s, HEAL_ALL))
        final = frame([], FINAL_COLUMNS)
        settle_s = max(QUIESCE_TIMEOUT_S, self.target.settle_s)
        # Twice where a node halted on its full disk just after the heal gave it room (started again between).
        for last in (False, True):
            try:
                final = self._settled(cluster, settle_s)
                break
            except ClusterError as error:
                if last or not self.nemesis.start_stopped():
                    print(f"splitbrain: cluster did not settle after healing: {error}", file=sys.stderr)
                    self.note_unsettled(cluster, error)
                    if isinstance(error, Unsettled) and error.met_below:  # each copy whole to where they met
                        final = self.final_logs(cluster)
                    break
        cluster.collect(self.dir / "nodes")
        memory = self.strategy.memory
        if memory is not None:  # what it learned: the run's own copy, and the campaign's to carry over
            for path in (self.dir / MEMORY_FILE, self.config.memory_file):
                if path is not None:
                    memory.write(path)
        final.to_parquet(self.dir / "final.parquet", index=False)
        tables = [frame(self.events, EVENTS_COLUMNS), *self.node_log_tables(cluster)]
        events = pd.concat([table for table in tables if len(table)] or tables[:1], ignore_index=True)
        events.sort_values("time_ns", kind="stable").to_parquet(self.dir / "events.parquet", index=False)

    def said(self, event: str, reason: str, **more: str) -> None:
        """An event of the harness's own, now, into the events table (`more`: the node it is about)."""
        self.events.append(
            {"time_ns": self.recorder.now_ns(), "event": event, "reason": reason, "source": "harness", **more}
        )

    def note_unsettled(self, cluster, error: ClusterError) -> None:
        """A healed cluster that did not settle while every node still
        answers: the run's own event, which `progress` judges where the
        target declares `recovers`. Where a node is silent (it halted, or
        its fault left it stopped) the run stays as it is: unknown."""
        if all(cluster.status(node) is not None for node in cluster.ids):
            self.said(UNSETTLED, str(error))

    def _settled(self, cluster, settle_s: float) -> pd.DataFrame:
        """The final logs, once the cluster agrees on a leader and its high watermarks meet."""
        cluster.wait_for_leader(settle_s)
        wait_converged(cluster, settle_s, self.target.settled_apart_s, self.committed_before())
        return self.final_logs(cluster)

    def committed_before(self) -> int:
        """The highest high watermark a node answered a poll with, where the
        target declares `recovers` (a healed cluster comes back to it); else 0."""
        if not self.target.capabilities.recovers:
            return 0
        polled = (row.get("hwm") for row in self.events if row.get("source") == "poll")
        return max((int(hwm) for hwm in polled if hwm is not None), default=0)

    # ------------------------------------------------------------------ load

    async def load_and_faults(self) -> None:
        """Clients, probes and the nemesis until the time limit (or, with
        `stop_on_violation`, until a checker judging the run live is certain
        it is violated); then the live verdict, where the run checks live."""
        config = self.config
        # Every client may wait in a thread at once (a target whose client blocks, as etcd's gateway
        # does), beside the probes and the nemesis: asyncio's own pool has only min(32, cores + 4).
        pool = ThreadPoolExecutor(max_workers=config.concurrency + THREADS_BESIDE_CLIENTS, thread_name_prefix="load")
        asyncio.get_running_loop().set_default_executor(pool)
        load_start_ns = self.recorder.now_ns()
        deadline = (self.recorder.start_ns + load_start_ns) / 1e9 + config.time_limit_s
        load_ends = deadline - config.lull_s
        self.clock_schedule(load_start_ns / 1e9)
        tasks = [asyncio.create_task(self.client_worker(load_ends, index)) for index in range(config.concurrency)]
        tasks.append(asyncio.create_task(self.probe(deadline)))
        tasks.append(asyncio.create_task(self.run_schedule(load_ends)))
        progress = asyncio.create_task(self.show_progress(deadline))
        flushing = asyncio.create_task(self.recorder.flushing(HISTORY_FLUSH_S))
        load = asyncio.gather(*tasks)
        watching = asyncio.create_task(self.live.watch()) if self.live is not None else None
        soaking = asyncio.create_task(self.soak.sampling()) if self.soak is not None else None
        stopped_at_s = None
        try:
            await asyncio.wait({load} | ({watching} if watching else set()), return_when=asyncio.FIRST_COMPLETED)
            if watching is not None and watching.done():
                watching.result()  # a bug of ours in the watcher is not hidden
                stopped_at_s = self.recorder.now_ns() / 1e9
                load.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await load
            else:
                load.result()
                if config.lull_s:
                    self.said(LULL, LULL_SAID)
        finally:
            self.recorder.flush_each_row()
            await ended([load, progress, flushing, *tasks, *(t for t in (watching, soaking) if t is not None)])
        load_ended = time.monotonic()
        if self.live is not None:
            self.meta["stopped_load_at_s"] = stopped_at_s
            self.write_meta()
            await asyncio.to_thread(self.live.ended, self.dir, stopped_at_s, load_ended)
        if self.soak is not None:
            await asyncio.to_thread(self.soak.ended)

    async def show_progress(self, deadline: float) -> None:
        total = self.config.time_limit_s
        with tqdm(total=round(total), desc="run", unit="s", disable=not self.config.progress) as bar:
            while True:
                await asyncio.sleep(0.5)
                elapsed = min(total, total - (deadline - time.monotonic()))
                bar.n = round(elapsed)
                bar.set_postfix(ops=self.recorder.rows, refresh=False)
                bar.refresh()

    async def run_schedule(self, load_ends: float) -> None:
        """The strategy's steps (nemesis/strategy.py): wait until each step's
        time, make its fault, and answer with what the nodes say now. Where
        the run ends in a lull, whatever the schedule left in force is
        healed as it begins."""
        load_s = self.config.load_s
        start = load_ends - load_s
        steps = self.strategy.steps(self.config.interval_s, load_s)
        at_s, op = next(steps)
        while True:
            await asyncio.sleep(max(0.0, start + at_s - time.monotonic()))
            if op is not None:
                if self.strategy.decides:
                    self.decided(op)
                await asyncio.to_thread(self.nemesis.invoke, op)
            try:
                at_s, op = steps.send((self.observe(), time.monotonic() - start))
            except StopIteration:
                break
        if self.config.lull_s:
            await asyncio.sleep(max(0.0, load_ends - time.monotonic()))
            if self.nemesis.in_force:
                await asyncio.to_thread(self.nemesis.invoke, NemesisOp(load_s, HEAL_ALL))

    def observe(self) -> Observation:
        """Each live node's latest state from the status probes (their
        answers, not the events rows: a target may leave the state out of
        those, as etcd does, whose status reads leader and term apart), and
        the nodes whose files a fault damaged that no status since shows
        repaired (those it does are let go here)."""
        gone = {
            **dict.fromkeys(self.nemesis.removed, "removed"),
            **dict.fromkeys(self.nemesis.down, KILL),
            **dict.fromkeys(self.nemesis.paused, PAUSE),
        }
        rows = {node: row for node, row in self.rows.items() if node not in gone}
        damaged = self.nemesis.damaged
        for node in repaired(damaged, rows):
            del damaged[node]
        return Observation(
            {node: state for node, state in self.states.items() if node not in gone},
            rows=rows,
            gone=gone,
            damaged=frozenset(damaged),
        )

    def decided(self, op: NemesisOp) -> None:
        """A guided decision, into run.json's schedule (on the history's clock)."""
        self.schedule.append(op)
        self.meta["schedule"].append({**asdict(op), "at_s": round(self.meta["load_start_s"] + op.at_s, 6)})
        self.write_meta()

    async def client_worker(self, deadline: float, index: int) -> None:
        config = self.config
        workload = self.workload.for_client()
        rng = random.Random(self.rng.random())
        pace_s = config.concurrency / config.rate
        process = next(self.process_ids)
        clients: dict[str, TargetClient] = {}
        # Each client finds the leader on its own, as independent clients do
        # (one shared guess sent every client to one node at a time): the
        # node that last answered it, else the leader a refusal named, else any;
        # unless a partition left it beside a minority (`Nemesis.confined`).
        hint: str | None = None
        try:
            while time.monotonic() < deadline:
                op = workload.next_op()
                node = self.nemesis.confined.get(index) or hint or rng.choice(self.cluster.ids)
                done = await self.invoke(process, op, node, clients)
                hint = node if done["type"] == "ok" else done.get("leader") or None
                workload.completed(op, done)
                if done["type"] == "info":
                    process = next(self.process_ids)
                await asyncio.sleep(rng.uniform(0.5, 1.5) * pace_s)
        finally:
            for client in clients.values():
                await self.closed(client)

    def backstop_s(self) -> float:
        """How long a client call may take before the harness gives up on it:
        a target's client times out on its own (an operation may take a few
        requests, each within the operation timeout); this only keeps one
        that never returns from holding the run past its end."""
        return BACKSTOP_REQUESTS * self.config.op_timeout_s + 1.0

    async def closed(self, client: TargetClient) -> None:
        """Close a client, giving up on one that does not close in time or
        whose connection broke (anything else is a bug of ours, not hidden)."""
        with contextlib.suppress(OSError, TimeoutError, TargetError):
            await asyncio.wait_for(client.close(), self.backstop_s())

    async def invoke(self, process: int, op: Operation, node: str, clients: dict) -> dict:
        """Perform `op`; the history row that completed it."""
        self.recorder.record(process, "invoke", op.f, key=op.key, value=op.value, node=node)
        client = clients.get(node)
        if client is None:
            try:
                client = clients[node] = await asyncio.wait_for(
                    self.target.connect(self.cluster.client[node], self.config.op_timeout_s, self.config.settings()),
                    self.backstop_s(),
                )
            except (TimeoutError, OSError) as exc:
                # Never sent: definitely did not happen.
                return self.recorder.record(
                    process, "fail", op.f, key=op.key, value=op.value, node=node, error=f"connect: {exc}"
                )
        try:
            # asyncio.timeout, not wait_for: no task per operation (wait_for wraps the call in one).
            async with asyncio.timeout(self.backstop_s()):
                fields = await client.invoke(op.f, op.key, op.value, self.config.op_timeout_s)
        except (TimeoutError, OSError, ConnectionError) as exc:
            fields = {
                "type": "info",
                "value": op.value,
                "error": f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__,
            }
            clients.pop(node, None)
            await self.closed(client)
        kind = fields.pop("type")
        fields.setdefault("value", op.value)
        return self.recorder.record(process, kind, op.f, key=op.key, node=node, **fields)

    # ------------------------------------------------------------------ observation

    async def probe(self, deadline: float) -> None:
        """Poll every node's status into `events` at a fixed interval, and
        every EXIT_CHECK_S look for nodes that exited on their own."""
        checked = time.monotonic()
        while time.monotonic() < deadline:
            if time.monotonic() - checked >= EXIT_CHECK_S:
                await asyncio.to_thread(self.note_exits, self.cluster)
                checked = time.monotonic()
            for node in self.cluster.ids:
                status = await asyncio.to_thread(self.cluster.status, node, 0.2)
                if status is not None:
                    row = self.target.status_event(status, self.recorder.now_ns())
                    self.events.append(row)
                    if status.get("state"):
                        self.states[node] = status["state"]
                    self.rows[node] = {**row, "state": status.get("state")}
            await asyncio.sleep(self.config.probe_interval_s)

    def note_exits(self, cluster) -> None:
        """An `exited` event for each node that exited without the nemesis
        stopping it, the first time it is seen (checkers/crashes.py). Only
        between the nemesis's operations (one under way may be stopping the
        node), and never a removed member (an etcd member exits once removed)."""
        if not self.nemesis.busy.acquire(blocking=False):
            return
        try:
            exited = cluster.exited()
        finally:
            self.nemesis.busy.release()
        for node, how in exited.items():
            if node not in self.exits and node not in self.nemesis.removed:
                self.exits.add(node)
                self.said("exited", how, node=node)

    def cluster_pids(self) -> dict[str, int]:
        return self.cluster.local_pids()

    def logged_since(self) -> list[dict]:
        """The nodes' own logs as events rows, those written since the last
        call (where this machine reads them as they are written: `live_log`);
        a log that cannot be read now is read again at the next call."""
        rows = []
        for node in self.cluster.ids:
            path = self.cluster.live_log(node)
            if path is None:
                continue
            if node not in self.log_readers:
                self.log_readers[node] = self.target.log_reader(path, self.recorder.wall_to_run_ns)
            with contextlib.suppress(HistoryError, OSError):
                rows += self.log_readers[node]()
        return rows

    def node_log_tables(self, cluster) -> list[pd.DataFrame]:
        """Each node's log as events, a table a node: a soak's nodes log
        millions of commits, and as one list of rows they were gigabytes."""
        tables = []
        for node in cluster.ids:
            path = self.dir / "nodes" / node / self.target.log_file
            if path.exists():
                tables.append(frame(self.target.log_events(path, self.recorder.wall_to_run_ns), EVENTS_COLUMNS))
        return tables

    def final_logs(self, cluster) -> pd.DataFrame:
        """Every node's copy, as the final table: a table a node (a soak's nodes hold millions of records each)."""
        tables = [
            frame(
                self.target.final_rows(node, cluster.client[node], functools.partial(cluster.node_files, node)),
                FINAL_COLUMNS,
            )
            for node in cluster.ids
        ]
        return pd.concat(tables, ignore_index=True) if tables else frame([], FINAL_COLUMNS)


def wait_converged(cluster, settle_s: float, apart_s: float | None, floor: int = 0) -> None:
    """Until the nodes' high watermarks meet, at `floor` or above (the
    highest a node reported before the heal, where the target declares
    `recovers`: a healed cluster comes back to what it had committed); or,
    with `apart_s` (the target's `settled_apart_s`), until every node has
    answered with the same high watermark as before for that long while
    they stay apart: the cluster has settled apart, and what each node
    holds is what it keeps, for the checkers to judge. Raises `Unsettled`
    where they have not by `settle_s`."""
    deadline = time.monotonic() + settle_s
    statuses: list[dict | None] = [None] * len(cluster.ids)
    hwms: list[int] = []
    last, since = None, time.monotonic()
    while time.monotonic() < deadline:
        statuses = [cluster.status(node) for node in cluster.ids]
        now = time.monotonic()
        hwms = [s["hwm"] for s in statuses if s is not None]
        if len(hwms) < len(statuses):  # a node silent: nothing has settled
            last = None
        elif len(set(hwms)) == 1 and hwms[0] >= floor:
            return
        elif hwms != last:
            last, since = hwms, now
        elif apart_s is not None and now - since >= apart_s:
            print(
                f"splitbrain: the nodes' high watermarks stayed apart for {now - since:.0f} s after healing"
                f" ({_watermarks(cluster.ids, statuses)}): their copies are judged as they are",
                file=sys.stderr,
            )
            return
        time.sleep(0.1)
    watermarks = _watermarks(cluster.ids, statuses)
    if len(hwms) == len(statuses) and len(set(hwms)) == 1:  # the last answers met, below `floor`
        raise Unsettled(
            f"nodes' high watermarks met at {hwms[0]}, below the {floor} committed before, after {settle_s:.0f} s ({watermarks})",
            met_below=True,
        )
    raise Unsettled(f"nodes' high watermarks did not converge in {settle_s:.0f} s ({watermarks})")


def _watermarks(nodes, statuses) -> str:
    """Each node's high watermark as its status gave it, for a line."""
    return ", ".join(
        f"{node} {'no answer' if s is None else s['hwm']}" for node, s in zip(nodes, statuses, strict=True)
    )
