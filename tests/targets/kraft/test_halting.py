"""A node that cannot write its election state halts, and its last event
names the epoch it holds durably, not the one it was about to write: the
novelty search's first campaign made a full disk meet an election, and the
halted event's unwritten epoch read as `epoch-went-back` when the node
started again from its disk, a false alarm on the correct node."""

from __future__ import annotations

import asyncio
import errno
import json
import time

from checkers.elections import election_safety
from history.schema import EVENTS_COLUMNS, frame
from targets.kraft.core import RaftConfig
from targets.kraft.server import NodeOptions, NodeServer


def options(tmp_path) -> NodeOptions:
    config = RaftConfig(node_id="n1", bootstrap=(("n1", None),), peers=("n1",), directory_id=None)
    return NodeOptions(config, tmp_path / "data", ("127.0.0.1", 0), ("127.0.0.1", 0), {}, tmp_path / "events.jsonl")


def full_disk(_state) -> None:
    raise OSError(errno.ENOSPC, "No space left on device", "quorum-state.json")


def test_a_halted_node_names_the_epoch_it_holds_on_disk(tmp_path):
    async def halt_in_an_election() -> NodeServer:
        server = NodeServer(options(tmp_path))
        server.data.write_election_state = full_disk  # the disk fills before the vote for itself is written
        start = now = time.monotonic_ns() // 1_000_000  # the core's clock, as the server keeps it
        while server.halted is None and now < start + 10_000:
            now += 100
            server.core.tick(now)
            server._drain()
        return server

    server = asyncio.run(halt_in_an_election())
    assert server.halted is not None and server.core.epoch == 1
    server.events.close()
    rows = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    [halted] = [row for row in rows if row["event"] == "halted"]
    assert halted["epoch"] == 0
    again = NodeServer(options(tmp_path))  # started again from its disk: epoch 0, as it held
    again.events.close()
    rows = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    events = frame([{**r, "time_ns": i, "source": "log"} for i, r in enumerate(rows)], EVENTS_COLUMNS)
    assert election_safety(events)["valid"] is True


class Written:
    """A client connection's writer, keeping what was written to it."""

    def __init__(self) -> None:
        self.lines: list[dict] = []

    def write(self, data: bytes) -> None:
        self.lines.append(json.loads(data))


def test_a_status_says_only_what_is_durable(tmp_path):
    """The status poll of a node whose core had moved to an epoch it then
    failed to write read that epoch: a false `epoch-went-back (poll)` when it
    started again (the novelty search with priors, a full disk on a candidate)."""

    async def poll_mid_election() -> list[dict]:
        server = NodeServer(options(tmp_path))
        server.data.write_election_state = full_disk
        writer = Written()
        start = now = time.monotonic_ns() // 1_000_000
        while server.core.epoch == 0 and now < start + 10_000:  # the core moves on; nothing drains it yet
            now += 100
            server.core.tick(now)
        server._handle_client_line(b'{"id": 1, "op": "status"}', writer, [])
        server.events.close()
        return writer.lines

    [answer] = asyncio.run(poll_mid_election())
    assert answer["error"] == "halted" and "epoch" not in answer


def test_a_task_of_the_node_that_dies_halts_it(tmp_path, monkeypatch):
    """A checkpoint that raised anything but OSError ended its task, and the
    node served on with no recovery point moving up, saying nothing: a
    defect of the node's own that no checker could see. The node halts on
    it, naming the error, as on a defect of its core."""

    def broken(_snapshot) -> None:
        raise ValueError("negative count")

    async def serve_until_halted() -> NodeServer:
        server = NodeServer(options(tmp_path))
        server.data.checkpoint = broken
        await asyncio.wait_for(server.serve(), 10)
        return server

    monkeypatch.setattr("targets.kraft.server.CHECKPOINT_S", 0.1)
    server = asyncio.run(serve_until_halted())
    assert server.halted == "internal error: ValueError: negative count"
    rows = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    assert [row["reason"] for row in rows if row["event"] == "halted"] == [server.halted]
