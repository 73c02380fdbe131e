"""The SSH hosts file: every mistake is one line naming the file and the field."""

from __future__ import annotations

import json

import pytest

from harness.ssh_hosts import HostsFileError, load_hosts

GOOD = {
    "user": "root",
    "key_file": "~/.ssh/id_ed25519",
    "known_hosts": "~/.ssh/known_hosts",
    "nodes": {"n1": {"ssh": "h1:22", "raft": "h1:9000", "client_port": 9100, "client": "h1:9100"}},
}


def write(tmp_path, spec):
    path = tmp_path / "hosts.json"
    path.write_text(spec if isinstance(spec, str) else json.dumps(spec))
    return path


def test_a_good_file_loads(tmp_path):
    hosts = load_hosts(write(tmp_path, GOOD))
    node = hosts.nodes["n1"]
    assert (node.ssh.host, node.ssh.port, node.raft, node.client) == ("h1", 22, ("h1", 9000), ("h1", 9100))
    assert hosts.toxiproxy_url is None and not str(node.ssh.key_file).startswith("~")


@pytest.mark.parametrize(
    "change, message",
    [
        ({"nodes": {}}, "nodes: expected an object"),
        ({"user": None}, "user: required"),
        ({"nodes": {"n1": {"ssh": "h1"}}}, "nodes.n1.raft: required"),
        ({"nodes": {"n1": {**GOOD["nodes"]["n1"], "ssh": "h1"}}}, "nodes.n1.ssh: expected HOST:PORT"),
        ({"nodes": {"n1": {**GOOD["nodes"]["n1"], "client_port": "x"}}}, "nodes.n1.client_port: expected a port"),
        ({"toxiproxy": {"listen_host": "0.0.0.0"}}, "toxiproxy.url: required"),
    ],
)
def test_mistakes_name_the_field(tmp_path, change, message):
    path = write(tmp_path, {**GOOD, **change})
    with pytest.raises(HostsFileError, match=rf"hosts\.json: {message}"):
        load_hosts(path)


def test_bad_json_names_the_line(tmp_path):
    with pytest.raises(HostsFileError, match=r"hosts\.json: not JSON: line 2"):
        load_hosts(write(tmp_path, '{\n  "user": }'))


def test_a_missing_file_is_named(tmp_path):
    with pytest.raises(HostsFileError, match="nope.json"):
        load_hosts(tmp_path / "nope.json")
