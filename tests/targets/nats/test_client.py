"""The NATS client's answers against a real nats-server 2.9.10 (one node,
JetStream on, started by the target's own command line): appends racing
for the same place land exactly where their acks say, and the ones whose
expectation was rejected are definite failures, in no replica's copy; a
server that does not answer in time leaves the operation indeterminate (the
client raises); a server without JetStream is a definite failure before
anything is sent; reads, writes and compare-and-set by revision."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

import targets
from harness.ports import free_port
from history.errors import ClusterError
from targets.interface import Address, NodeSpec
from targets.nats.blocks import records
from targets.nats.streams import STREAM
from targets.nats.target import STORE
from targets.options import settings

NATS = targets.get("nats")
SETTINGS = settings(NATS.options, {"replicas": 1})


@pytest.fixture
def server(tmp_path):
    """One real server; its address (with the monitor), its process and its
    data directory. A server that exits at once lost its ports to another
    process (pytest's workers choose ports each on its own): started again
    on others, so that what answers is the server this test signals."""
    for attempt in range(3):
        ports = {"client": free_port(), "raft": free_port(), "monitor": free_port()}
        process, address = started("n1", tmp_path / f"data{attempt}", ports, {}, tmp_path / "node.log")
        deadline = time.monotonic() + 10
        while NATS.status(address, 0.5) is None and time.monotonic() < deadline:
            time.sleep(0.1)
        if process.poll() is None:
            break
    else:
        pytest.fail(f"nats-server exited: {(tmp_path / 'node.log').read_text()[-500:]}")
    yield address, process, tmp_path / f"data{attempt}"
    os.kill(process.pid, signal.SIGCONT)
    process.kill()
    process.wait()


def started(node: str, data: Path, ports: dict[str, int], peers: dict[str, str], log_file: Path):
    """A server started by the target's own command line, on 127.0.0.1 at
    `ports` (client, raft, monitor), routed to `peers`; its process and address."""
    spec = NodeSpec(
        node,
        str(data),
        "",
        f"127.0.0.1:{ports['raft']}",
        f"127.0.0.1:{ports['client']}",
        peers,
        f"127.0.0.1:{ports['raft']}",
        f"127.0.0.1:{ports['client']}",
        listen={"monitor": f"127.0.0.1:{ports['monitor']}"},
    )
    with open(log_file, "wb") as log:
        process = subprocess.Popen(NATS.command("python3", spec, ()), stdout=log, stderr=subprocess.STDOUT)
    return process, Address("127.0.0.1", ports["client"], {"monitor": ("127.0.0.1", ports["monitor"])})


def stopped(pid: int) -> None:
    """Every thread of `pid` stopped (SIGSTOP reaches a thread busy on the
    other core only when it next leaves the kernel)."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        states = [
            (task / "stat").read_text().rpartition(")")[2].split()[0] for task in Path(f"/proc/{pid}/task").iterdir()
        ]
        if set(states) == {"T"}:
            return
        time.sleep(0.01)
    pytest.fail(f"nats-server ({pid}) did not stop: {states}")


def racing_appends(address, count: int) -> list[dict]:
    NATS.prepare_workload("append", address, SETTINGS, 10.0)
    return asyncio.run(appended(address, count))


async def appended(address, count: int) -> list[dict]:
    clients = [await NATS.connect(address, 2.0, SETTINGS) for _ in range(4)]
    try:
        done = await asyncio.gather(*(clients[i % 4].invoke("append", None, i, 2.0) for i in range(count)))
    finally:
        for client in clients:
            await client.close()
    return done


async def one_by_one(address, count: int) -> list[dict]:
    client = await NATS.connect(address, 2.0, SETTINGS)
    try:
        return [await client.invoke("append", None, i, 2.0) for i in range(count)]
    finally:
        await client.close()


def test_racing_appends_land_where_acked_and_rejected_ones_nowhere(server):
    address, _, data = server
    done = racing_appends(address, 40)
    ok = {d["value"]: d["offset"] for d in done if d["type"] == "ok"}
    failed = [d for d in done if d["type"] == "fail"]
    assert ok and failed and all("wrong last sequence" in d["error"] for d in failed)
    assert {d["type"] for d in done} == {"ok", "fail"} and not any("error" in d for d in done if d["type"] == "ok")
    copy = {row["value"]: row["offset"] for row in NATS.final_rows("n1", address, data.joinpath)}
    assert copy == ok and sorted(copy.values()) == list(range(len(ok)))


def test_registers_read_write_and_compare_by_revision(server):
    address, _, data = server

    async def script():
        client = await NATS.connect(address, 2.0, SETTINGS)
        try:
            return [
                await client.invoke(f, "k", value, 2.0)
                for f, value in [
                    ("read", None),
                    ("write", 3),
                    ("read", None),
                    ("cas", [3, 4]),
                    ("cas", [3, 5]),
                    ("read", None),
                ]
            ]
        finally:
            await client.close()

    NATS.prepare_workload("register", address, SETTINGS, 10.0)
    answers = asyncio.run(script())
    assert [(a["type"], a["value"]) for a in answers] == [
        ("ok", None),
        ("ok", 3),
        ("ok", 3),
        ("ok", [3, 4]),
        ("fail", [3, 5]),
        ("ok", 4),
    ]
    assert answers[4]["error"] == "cas-mismatch"
    assert NATS.final_rows("n1", address, data.joinpath) == []  # a register run has no stream to read back


def test_a_server_that_does_not_answer_leaves_the_operation_indeterminate(server):
    address, process, _ = server

    async def script():
        client = await NATS.connect(address, 2.0, SETTINGS)
        # A working client first: on a loaded machine the bucket's first lookup can time out ("not ready").
        deadline = time.monotonic() + 20
        while (first := await client.invoke("write", "k", 1, 2.0))["type"] != "ok":
            assert time.monotonic() < deadline, f"the bucket never took a write: {first}"
        os.kill(process.pid, signal.SIGSTOP)
        stopped(process.pid)
        try:
            return await client.invoke("write", "k", 2, 0.5)
        finally:
            os.kill(process.pid, signal.SIGCONT)
            await client.close()

    NATS.prepare_workload("register", address, SETTINGS, 10.0)
    with pytest.raises(OSError):
        answered = asyncio.run(script())
        pytest.fail(f"a server that does not answer was taken to have answered: {answered}")


def test_a_stream_that_vanished_is_not_made_again(server):
    address, _, data = server
    racing_appends(address, 4)

    async def script():
        client = await NATS.connect(address, 2.0, SETTINGS)
        try:
            await client.js.delete_stream("LOG")
            return await client.invoke("append", None, 99, 2.0)
        finally:
            await client.close()

    done = asyncio.run(script())
    assert done["type"] == "fail" and done["error"].startswith("read: ")
    assert NATS.final_rows("n1", address, data.joinpath) == [
        {"node": "n1", "offset": None, "epoch": None, "value": None}
    ]


def test_without_jetstream_an_operation_fails_before_anything_is_sent(tmp_path):
    """Also: its status names no leader (a server with JetStream turned off
    claimed to lead itself, so a cluster two of whose servers had turned it
    off never agreed on a leader, and no copy was read)."""
    port, monitor = free_port(), free_port()
    process = subprocess.Popen(
        ["nats-server", "-a", "127.0.0.1", "-p", str(port), "-m", str(monitor)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        time.sleep(0.5)
        status = NATS.status(Address("127.0.0.1", port, {"monitor": ("127.0.0.1", monitor)}), 2.0)
        assert status is not None and (status["state"], status["leader"]) == ("no-leader", None), status

        async def script():
            client = await NATS.connect(Address("127.0.0.1", port), 2.0, SETTINGS)
            try:
                return await client.invoke("append", None, 1, 1.0)
            finally:
                await client.close()

        done = asyncio.run(script())
        assert done["type"] == "fail" and done["error"].startswith("read: "), done
        with pytest.raises(ClusterError, match="stream was not made"):
            NATS.prepare_workload("append", Address("127.0.0.1", port), SETTINGS, 1.0)
    finally:
        process.kill()
        process.wait()


def test_each_server_s_copy_is_read_from_its_own_files(tmp_path):
    """Two servers, one stream with a replica on each: the copy read for a
    server is what its own message blocks hold. Each of B's records is
    rewritten in place (its last digit changed), so B's files and A's differ
    at every place; a direct get through B, which the stream's queue group
    hands to either server, read B as holding A's records about half the
    time."""
    ports = {node: {"client": free_port(), "raft": free_port(), "monitor": free_port()} for node in ("a", "b")}
    servers, addresses = [], {}
    try:
        for node, other in (("a", "b"), ("b", "a")):
            peers = {other: f"127.0.0.1:{ports[other]['raft']}"}
            process, addresses[node] = started(node, tmp_path / node, ports[node], peers, tmp_path / f"{node}.log")
            servers.append(process)
        two = settings(NATS.options, {"replicas": 2})
        NATS.prepare_workload("append", addresses["a"], two, 30.0)
        done = asyncio.run(one_by_one(addresses["a"], 20))
        acked = {d["offset"]: d["value"] for d in done if d["type"] == "ok"}
        deadline = time.monotonic() + 20
        while {(NATS.status(addresses[n], 1.0) or {}).get("hwm") for n in "ab"} != {len(acked)}:
            assert time.monotonic() < deadline, "the two replicas never held every acknowledged append"
            time.sleep(0.2)
        [block] = (tmp_path / "b" / STORE / STREAM / "msgs").glob("*.blk")
        data = bytearray(block.read_bytes())
        for _, body in records(bytes(data)):  # each body a JSON number: its last digit changed
            data[body.stop - 1] = ord("0") + (data[body.stop - 1] - ord("0") + 1) % 10
        block.write_bytes(bytes(data))
        copies = {
            node: {r["offset"]: r["value"] for r in NATS.final_rows(node, addresses[node], (tmp_path / node).joinpath)}
            for node in "ab"
        }
        assert len(acked) > 10 and copies["a"] == acked
        assert copies["b"] == {offset: value - value % 10 + (value + 1) % 10 for offset, value in acked.items()}
    finally:
        for server in servers:
            server.kill()
            server.wait()
