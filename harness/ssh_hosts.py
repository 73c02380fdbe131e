"""The hosts file of the SSH backend (`splitbrain run --backend ssh --hosts FILE`).

    {
      "user": "root",
      "key_file": "~/.ssh/id_ed25519",
      "known_hosts": "~/.ssh/known_hosts",
      "nodes": {
        "n1": {"ssh": "10.0.0.1:22", "raft": "10.0.0.1:9000", "client_port": 9100, "client": "10.0.0.1:9100"},
        ...
      },
      "toxiproxy": {"url": "http://10.0.0.9:8474", "listen_host": "0.0.0.0", "route_host": "10.0.0.9"}
    }

`raft` is where peers reach a node (and the port it listens on); `client` is
where the harness reaches its client port. A target's further listeners
(its `listeners`: a monitoring port, say) take the ports after
`client_port`, reached on `client`'s host at the same numbers. Without `toxiproxy` the nodes
dial each other directly and link faults are not available. Every mistake is
reported in one line naming the file and the field.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from harness.ssh_cluster import SshHost, SshNode
from history.errors import UsageError
from results.user_files import read_json


class HostsFileError(UsageError):
    pass


@dataclass(frozen=True)
class HostsFile:
    nodes: dict[str, SshNode]
    toxiproxy_url: str | None
    listen_host: str
    route_host: str | None


def _address(path: Path, field: str, text) -> tuple[str, int]:
    host, sep, port = str(text).rpartition(":")
    if not sep or not host or not port.isdigit():
        raise HostsFileError(f"{path}: {field}: expected HOST:PORT, got {text!r}")
    return host, int(port)


def load_hosts(path: Path) -> HostsFile:
    path = Path(path)
    spec = read_json(path, HostsFileError)
    if not isinstance(spec, dict) or not isinstance(spec.get("nodes"), dict) or not spec["nodes"]:
        raise HostsFileError(f"{path}: nodes: expected an object of node id -> node")
    for field in ("user", "key_file", "known_hosts"):
        if not isinstance(spec.get(field), str):
            raise HostsFileError(f"{path}: {field}: required (a string)")
    key_file = Path(spec["key_file"]).expanduser()
    known_hosts = Path(spec["known_hosts"]).expanduser()
    nodes = {}
    for node, entry in spec["nodes"].items():
        where = f"nodes.{node}"
        if not isinstance(entry, dict):
            raise HostsFileError(f"{path}: {where}: expected an object")
        for field in ("ssh", "raft", "client_port", "client"):
            if field not in entry:
                raise HostsFileError(f"{path}: {where}.{field}: required")
        if not isinstance(entry["client_port"], int):
            raise HostsFileError(f"{path}: {where}.client_port: expected a port number")
        host, port = _address(path, f"{where}.ssh", entry["ssh"])
        nodes[node] = SshNode(
            SshHost(host, port, str(entry.get("user", spec["user"])), key_file, known_hosts),
            _address(path, f"{where}.raft", entry["raft"]),
            entry["client_port"],
            _address(path, f"{where}.client", entry["client"]),
        )
    proxy = spec.get("toxiproxy") or {}
    if proxy and not isinstance(proxy.get("url"), str):
        raise HostsFileError(f"{path}: toxiproxy.url: required when toxiproxy is given")
    return HostsFile(nodes, proxy.get("url"), proxy.get("listen_host", "0.0.0.0"), proxy.get("route_host"))
