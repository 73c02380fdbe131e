"""The reference quorum behind the target interface (`targets/interface.py`):
its node and format commands, its client protocol (line-delimited JSON on
the client port) turned into history completions, its status and event log
turned into events rows, its committed log into final rows, voter changes,
and its own commands (`splitbrain node`, `splitbrain simulate`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from history.errors import HistoryError, SettingError, UsageError
from targets.interface import (
    Capabilities,
    Mutable,
    NodeSpec,
    OwnCommands,
    RealSchedule,
    Simulated,
    SimulatedSearch,
    Target,
    TargetClient,
    VoterChanges,
)
from targets.log_lines import NewLines, json_field
from targets.options import Option
from targets.options import defaults as option_defaults

from .client import Client, call, call_many
from .core import BUGS, RaftConfig
from .sim.stuck import STUCK_FETCH_TIMEOUTS
from .storage import format_data_dir, new_directory_id

# Errors after which the operation definitely did not happen.
DEFINITE_ERRORS = {"not-leader", "bad-request", "cas-mismatch", "halted"}


def request(f: str, key: str | None, value: Any) -> dict:
    """The client-port request fields of one workload operation."""
    if f == "append":
        return {"value": value}
    if f == "write":
        return {"key": key, "value": value}
    if f == "cas":
        return {"key": key, "expected": value[0], "new": value[1]}
    return {"key": key}


def completion(f: str, value: object, answer: dict | None, error: str | None = None) -> dict:
    """The completion row fields of an operation, from the node's answer or
    from a client-side error (timeout, lost connection: always `info`)."""
    if answer is None:
        return {"type": "info", "error": error or "no answer", "value": value}
    fields = {"epoch": answer.get("epoch"), "leader": answer.get("leader"), "offset": answer.get("offset")}
    failure = answer.get("error")
    if failure is None:
        return {"type": "ok", "value": answer.get("value") if f == "read" else value, **fields}
    kind = "fail" if failure in DEFINITE_ERRORS else "info"
    return {"type": kind, "error": failure, "value": value, **fields}


def final_row(node: str, offset: int, epoch: int, data: dict) -> dict:
    """A `final` row: an append record shows its value, any other record its whole data."""
    value = data.get("value") if data.get("op") == "append" else data
    return {"node": node, "offset": offset, "epoch": epoch, "value": value}


def log_event(record: dict, time_ns: int) -> dict:
    """One line of a node's events.jsonl as an events row."""
    return {
        "time_ns": time_ns,
        "node": record.get("node"),
        "generation": record.get("generation"),
        "event": record.get("event"),
        "state": record.get("state"),
        "epoch": record.get("epoch"),
        "leader": record.get("leader"),
        "voted_for": record.get("voted_for"),
        "candidate": record.get("candidate"),
        "offset": record.get("offset", record.get("log_end_offset")),
        "hwm": record.get("hwm"),
        "directory_id": record.get("directory_id"),
        "voters": record.get("voters"),
        "source": "log",
        "as_directory": record.get("as_directory"),
        "ack_when_committed": record.get("ack_when_committed"),
        "replicas": record.get("replicas"),
        "reason": record.get("reason"),
    }


class KRaftClient(TargetClient):
    def __init__(self, client: Client) -> None:
        self.client = client

    async def invoke(self, f: str, key: str | None, value: object, timeout_s: float) -> dict:
        return completion(f, value, await self.client.call(f, timeout_s, **request(f, key, value)))

    async def close(self) -> None:
        await self.client.close()


class KRaft(Target, VoterChanges, Simulated, OwnCommands, Mutable):
    name = "kraft"
    capabilities = Capabilities(
        ok_proves_leadership=True,
        generations=True,
        voter_changes=True,
        workloads=("append", "register"),
        peer_routes=True,
        lazy_disks=True,
        clock_faults=True,
        data_files=(("log", "log.bin"),),
        transitions_name_vote=True,
        framing="targets.kraft.framing",
        steady_leaders=True,
        recovers=True,
    )
    options = (
        Option("bugs", (), "plant a bug (repeatable)", choices=tuple(sorted(BUGS)), spelling="--bug"),
        Option("pre_vote", True, "disable KIP-996 Pre-Vote"),
        Option("check_quorum", True, "leaders never resign on lost fetches"),
        Option("auto_join", False, "observers ask the leader to make them voters"),
        Option("ack_when_committed_always", False, "auto-join asks with AckWhenCommitted=true, as before KIP-1186"),
        Option("flush_interval_ms", 0, "followers fsync their log every N ms, not per write (0: per write)"),
        Option(
            "read_lease_ms",
            0,
            "the leader answers reads from its state while a majority fetched within N ms "
            "of its clock; under the fetch timeout (0: reads go through the log)",
        ),
        Option(
            "election_timeout_ms",
            300,
            "a follower that hears no leader for N ms (at random up to twice it) stands for election",
            least=10,
        ),
        Option("fetch_timeout_ms", 600, "a leader that a majority has not fetched from for N ms resigns", least=10),
        Option(
            "fetch_max_records",
            RaftConfig.max_fetch_records,
            "a fetch answer carries at most N records (few: followers catch up record by record, "
            "which is where Raft's commit rule matters)",
            least=1,
        ),
    )
    image_packages = ("python3",)
    ssh_sources = ("targets",)

    def elects_within_ms(self, settings: dict) -> int | None:
        """The simulator's own bound (sim/stuck.py): ten fetch timeouts, 6 s
        at the defaults. Not less: two followers that timed out together
        refuse each other's pre-votes while each still counts the lost
        leader as heard (KIP-996), and go back to it for another fetch
        timeout, so correct runs of the main job's settings stood stuck up
        to 2.9 s (20 runs, 2026-12-07). None with a follower flush
        interval: a node that started uncleanly needs every voter's vote
        (`RaftCore._votes_needed`), so a majority up may rightly wait for
        one that is down."""
        return None if settings["flush_interval_ms"] else STUCK_FETCH_TIMEOUTS * settings["fetch_timeout_ms"]

    def node_args(self, settings: dict) -> tuple[str, ...]:
        """Requests (votes, fetches) are retried and long polls answered well
        within an election timeout, as KRaft's request manager does."""
        if settings["read_lease_ms"] >= settings["fetch_timeout_ms"]:
            raise SettingError(
                "read_lease_ms",
                f"{settings['read_lease_ms']} must be under the fetch timeout "
                f"({settings['fetch_timeout_ms']} ms): a longer lease outlives the followers' promise "
                "not to elect another leader",
            )
        election = settings["election_timeout_ms"]
        args = [
            f"--election-timeout-ms={election}",
            f"--request-timeout-ms={election // 2}",
            f"--fetch-max-wait-ms={election // 3}",
            f"--fetch-timeout-ms={settings['fetch_timeout_ms']}",
        ]
        if settings["flush_interval_ms"]:
            args.append(f"--flush-interval-ms={settings['flush_interval_ms']}")
        if settings["read_lease_ms"]:
            args.append(f"--read-lease-ms={settings['read_lease_ms']}")
        if settings["fetch_max_records"] != RaftConfig.max_fetch_records:
            args.append(f"--fetch-max-records={settings['fetch_max_records']}")
        args += [f"--bug={bug}" for bug in settings["bugs"]]
        switches = ("pre_vote", "check_quorum", "auto_join", "ack_when_committed_always")
        args += [
            option.flag
            for option in self.options
            if option.name in switches and settings[option.name] != option.default
        ]
        return tuple(args)

    def versions(self) -> dict[str, str]:
        return {"kraft": "reference quorum (this repository)"}

    def new_directory_id(self) -> str:
        return new_directory_id()

    def format(self, data_dir: Path, directory_id: str, bootstrap: tuple[tuple[str, str], ...]) -> None:
        format_data_dir(data_dir, directory_id, bootstrap)

    def format_command(
        self, python: str, node: str, data_dir: str, directory_id: str, bootstrap: tuple[tuple[str, str], ...]
    ) -> list[str]:
        voters = ",".join(f"{v}@{d}" for v, d in bootstrap)
        return [
            python,
            "-m",
            "targets.kraft.format",
            f"--id={node}",
            f"--data-dir={data_dir}",
            f"--directory-id={directory_id}",
            *([f"--initial-voters={voters}"] if voters else []),
        ]

    def command(self, python: str, spec: NodeSpec, options: tuple[str, ...]) -> list[str]:
        """The node's event log lives beside (not in) the data directory, so a
        wiped disk does not take the evidence with it."""
        return [
            python,
            "-m",
            "targets.kraft.node",
            f"--id={spec.node}",
            f"--data-dir={spec.data_dir}",
            f"--event-log={spec.event_log}",
            f"--raft-listen={spec.raft_listen}",
            f"--client-listen={spec.client_listen}",
            *(f"--peer={peer}={address}" for peer, address in spec.peers.items()),
            *options,
        ]

    async def connect(self, address: tuple[str, int], timeout_s: float, settings: dict) -> TargetClient:
        return KRaftClient(await Client.connect(*address, timeout_s))

    def status(self, address: tuple[str, int], timeout_s: float) -> dict | None:
        """The node's status; None where it does not answer one (down, or halted)."""
        try:
            answer = call(address, "status", timeout_s)
        except (OSError, ValueError):
            return None
        return None if "error" in answer else answer

    def status_event(self, status: dict, time_ns: int) -> dict:
        return {
            "time_ns": time_ns,
            "node": status["node"],
            "generation": status.get("generation"),
            "event": "status",
            "state": status.get("state"),
            "epoch": status.get("epoch"),
            "leader": status.get("leader"),
            "voted_for": status.get("voted_for"),
            "offset": status.get("log_end_offset"),
            "synced": status.get("synced_offset"),
            "hwm": status.get("hwm"),
            "directory_id": status.get("directory_id"),
            "voters": status.get("voters"),
            "source": "poll",
        }

    def log_events(self, path: Path, to_run_ns) -> list[dict]:
        """events.jsonl, one JSON object a line; a torn last line (the node
        was killed mid-write) is left out."""
        rows = []
        lines = Path(path).read_text(encoding="utf-8", errors="replace").splitlines()
        for number, line in enumerate(lines, start=1):
            try:
                record = json.loads(line)
            except ValueError:
                if number == len(lines):
                    continue
                raise HistoryError(f"{path}: line {number}: not JSON") from None
            rows.append(log_event(record, to_run_ns(record["ts_ns"])))
        return rows

    def log_reader(self, path: Path, to_run_ns) -> Callable[[], list[dict]]:
        """events.jsonl's new lines only: it logs every commit, so read whole
        at each live look it was most of the look's time within a minute."""
        lines = NewLines(path)

        def read() -> list[dict]:
            rows = []
            for line in lines():
                try:
                    record = json.loads(line)
                except ValueError:  # damaged in the writing: the batch check, reading the whole log, names it
                    continue
                rows.append(log_event(record, to_run_ns(record["ts_ns"])))
            return rows

        return read

    def line_wall_ns(self, line: str) -> int | None:
        """An events.jsonl record's `ts_ns`."""
        stamp = json_field(line, "ts_ns")
        return stamp if isinstance(stamp, int) else None

    def final_rows(self, node: str, address: tuple[str, int], files: Callable[[str], Path]) -> list[dict]:
        rows, start = [], 0
        while batch := call(address, "log", 5.0, **{"from": start})["records"]:
            rows += [final_row(node, r["offset"], r["epoch"], r["data"]) for r in batch]
            start = batch[-1]["offset"] + 1
        return rows

    def change_voters(self, address: tuple[str, int], changes: list[dict], timeout_s: float) -> list[dict | None]:
        return call_many(address, changes, timeout_s)

    def mutation_sources(self) -> dict[str, bool]:
        """The Raft core, its log and its election state, which the simulation
        runs, and the node's server and storage (its persistence), which it does not."""
        return {
            "targets/kraft/core.py": True,
            "targets/kraft/log.py": True,
            "targets/kraft/quorum_state.py": True,
            "targets/kraft/server.py": False,
            "targets/kraft/storage.py": False,
        }

    def main(self, command: str, argv: list[str]) -> int:
        if command == "node":
            from . import node

            return node.main(argv)
        raise UsageError(f"{self.name} has no command {command!r}")

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
        """A seeded campaign of fault schedules over the simulated cluster:
        random ones, or those `search` chooses (the shell's strategy, which
        keeps what it learns); the verdict of the `simulation-invariants` checker."""
        from .sim.search import one_schedule
        from .sim.simulation import SimSettings

        settings = _simulated(settings)
        fetch_timeout_ms = settings.get("fetch_timeout_ms", SimSettings.fetch_timeout_ms)
        if settings.get("read_lease_ms", 0) >= fetch_timeout_ms:
            raise SettingError("read_lease_ms", f"must be under the simulator's fetch timeout ({fetch_timeout_ms} ms)")
        anomalies = []
        ran = 0
        digest = hashlib.sha256()
        for offset in progress(range(schedules)):
            ran += 1
            anomaly, did = one_schedule(SimSettings(seed=seed + offset, **settings), steps, membership, search, moments)
            digest.update(did.encode())
            if anomaly is not None:
                anomalies.append(anomaly)
                if not keep_going:
                    break
        stats = {
            "schedules": ran,
            "search": search.name if search is not None else "random",
            "nodes": settings.get("nodes"),
            "moments": moments,
            "bugs": sorted(settings.get("bugs", ())),
            # What the simulated nodes did, all schedules together: equal digests, equal behaviour (`mutate`).
            "digest": digest.hexdigest(),
        }
        checker = {"valid": not anomalies, "anomalies": anomalies, "stats": stats}
        return {"valid": not anomalies, "checkers": {"simulation-invariants": checker}}

    def steadiness(self, settings: dict, violation: dict) -> tuple[int, int] | None:
        from .sim.replay import replayed
        from .sim.search import RETIMINGS, retimed

        if "ops" in violation:  # (the novelty search's, chosen as it went: no steps to run again)
            return None
        return retimed(_simulated_for(settings, violation), replayed(violation), violation["violation"]), RETIMINGS

    def real_schedule(self, settings: dict, violation: dict) -> RealSchedule:
        from .sim.replay import (
            first_leader,
            lasting,
            lease_for,
            made_changes,
            real_schedule,
            replayed,
            scale_of,
            searched_schedule,
            timeouts_for,
            workload_for,
        )

        defaults = option_defaults(self.options)
        timeouts = timeouts_for(settings, violation, defaults)
        scale = scale_of(settings, timeouts.get("election_timeout_ms", defaults["election_timeout_ms"]))
        if "ops" in violation:  # the novelty search's: operations aimed by role, as a run's
            ops, limit_s = searched_schedule(violation["ops"], scale)
        else:
            sim = _simulated_for(settings, violation)
            nodes = settings["nodes"] + settings.get("observers", 0)
            steps = replayed(violation)
            ops, limit_s = real_schedule(steps, nodes, scale, first_leader(sim), made_changes(sim, steps))
            limit_s = lasting(ops, limit_s, violation, scale)
        options = {**timeouts, **lease_for(settings, timeouts, defaults)}
        return RealSchedule(ops, limit_s, workload_for(violation["violation"]), options)


def _simulated_for(settings: dict, violation: dict):
    """The simulation a random schedule's violation broke: `simulate`'s settings at its seed."""
    from .sim.simulation import SimSettings

    return SimSettings(seed=violation["seed"], **_simulated(settings))


def _simulated(settings: dict) -> dict:
    """`simulate`'s settings as the simulator takes them (its planted bugs a set)."""
    return {**settings, "bugs": frozenset(settings.get("bugs", ()))}


TARGET = KRaft()
