"""The asyncio shell around `RaftCore`: sockets, disk, clock and event log.

Two TCP ports speak line-delimited JSON. The raft port takes one message per
line from peers (each node dials each peer at the address it was given, which
may be a link proxy). The client port takes requests `{"id", "op", ...}` and
answers each with one line carrying the same `id`:

    status                 node, generation, directory_id, state, epoch, leader,
                           voted_for, log_end_offset, hwm, voters
    log      from          committed records from offset `from` (at most 1000)
    append   value         after commit: offset, epoch
    write    key value     after commit: offset, epoch
    cas      key expected new   after commit; or error `cas-mismatch` with the value seen
    read     key           linearizable: goes through the log; value
    add-voter     node directory_id [ack_when_committed=true]
                           AddRaftVoter (the replica must be fetching from this
                           leader): answered once the new voter set is
                           committed, or once written when ack_when_committed
                           is false; offset, epoch
    remove-voter  node [directory_id]   RemoveRaftVoter, answered once committed

Errors are definite (`not-leader` naming the leader it knows, `bad-request`,
`cas-mismatch`, and the voter-change refusals `leader-not-ready`,
`change-in-progress`, `duplicate-voter`, `replica-not-fetching`,
`voter-not-found`, `last-voter`) except `indeterminate`: the entry was truncated from this
node's log and the node cannot say more about it.

All core output goes through `_drain`, which persists before it sends.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import random
import signal
import time
from collections.abc import Coroutine, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from .core import INDETERMINATE, RaftConfig, RaftCore, Ready
from .messages import Message, decode, encode
from .storage import DataDir, Snapshot
from .wallclock import true_time_ns

log = logging.getLogger("kraft")

LOG_READ_LIMIT = 1000
# How often the recovery point moves up (`DataDir.checkpoint`): what a start reads record by record.
CHECKPOINT_S = 5.0
LINK_QUEUE_LIMIT = 10_000
CONNECT_TIMEOUT_S = 0.5
RECONNECT_BACKOFF_S = 0.05
# Per command: the fields it needs, then the ones it may have.
_COMMANDS = {
    "append": (("value",), ()),
    "write": (("key", "value"), ()),
    "cas": (("key", "expected", "new"), ()),
    "read": (("key",), ()),
    "add-voter": (("node", "directory_id"), ("ack_when_committed",)),
    "remove-voter": (("node",), ("directory_id",)),
}


@dataclass(frozen=True)
class NodeOptions:
    config: RaftConfig
    data_dir: Path
    raft_listen: tuple[str, int]
    client_listen: tuple[str, int]
    peers: dict[str, tuple[str, int]]
    event_log: Path
    tick_ms: int = 10
    seed: int | None = None


# Turns of the event loop a late tick waits: one polls the sockets and
# buffers what they hold, the next runs the readers it woke, one more for
# a reader woken behind the tick.
READS_BEFORE_A_LATE_TICK = 3


def _now_ms() -> int:
    return time.monotonic_ns() // 1_000_000


class PeerLink:
    """The outbound connection to one peer. Messages sent while it is down are
    dropped, as a lossy network would: Raft retries what matters."""

    def __init__(self, address: tuple[str, int]) -> None:
        self.address = address
        self.queue: asyncio.Queue[bytes] = asyncio.Queue(LINK_QUEUE_LIMIT)
        self.connected = False
        self.task: asyncio.Task | None = None

    def send(self, line: bytes) -> None:
        if self.connected and not self.queue.full():
            self.queue.put_nowait(line)

    async def run(self) -> None:
        while True:
            writer = None
            try:
                _, writer = await asyncio.wait_for(asyncio.open_connection(*self.address), CONNECT_TIMEOUT_S)
                self.connected = True
                while True:
                    line = await self.queue.get()
                    writer.write(line)
                    while not self.queue.empty():
                        writer.write(self.queue.get_nowait())
                    await writer.drain()
            except (TimeoutError, OSError):
                pass
            finally:
                self.connected = False
                while not self.queue.empty():
                    self.queue.get_nowait()
                if writer is not None:
                    writer.close()
            await asyncio.sleep(RECONNECT_BACKOFF_S)


def halt_as_built(options: NodeOptions, error: Exception) -> str:
    """The node's own code broke as it was built, before it could serve
    (its core, or its log read back): the event log says so, as it does a
    halt while serving (`NodeServer._halt`), so that a run judges the stop
    (node-crashes) rather than taking it for a node that could not be
    started. Returns why it halted."""
    reason = f"internal error: {type(error).__name__}: {error}"
    log.error("halting as it was built", exc_info=error)
    record = {"ts_ns": true_time_ns(), "node": options.config.node_id, "event": "halted", "reason": reason}
    with contextlib.suppress(OSError), open(options.event_log, "a", encoding="utf-8") as events:
        events.write(json.dumps(record) + "\n")
    return reason


class NodeServer:
    def __init__(self, options: NodeOptions) -> None:
        self.options = options
        self.data = DataDir(options.data_dir)
        self.config = replace(
            options.config,
            directory_id=self.data.directory_id,
            generation=self.data.generation,
            unclean_start=self.data.unclean,
            truncated_log=self.data.must_catch_up,
        )
        self.generation = self.data.generation
        rng = random.Random(options.seed)
        snapshot = self.data.snapshot
        self.core = RaftCore(
            self.config,
            self.data.election_state,
            self.data.entries,
            rng,
            _now_ms(),
            (snapshot.applied, snapshot.registers) if snapshot is not None else None,
        )
        self.durable_end = len(self.data.entries)
        self.links = {peer: PeerLink(address) for peer, address in options.peers.items()}
        self.events = open(options.event_log, "a", encoding="utf-8")
        self.clients: dict[int, tuple[asyncio.StreamWriter, Any]] = {}
        self.request_ids = itertools.count()
        self.drain_scheduled = False
        self.stopping = asyncio.Event()
        # Why the node stopped on a write it could not make (`_halt`), if it did.
        self.halted: str | None = None
        self._write_event({"event": "start", **self.core.status()})
        if self.data.truncated is not None:
            # `offset`: the records kept; `bytes`: how much of the log's tail was cut off, and why.
            self._write_event({"event": "log-truncated", "epoch": self.core.epoch, **self.data.truncated})
            log.warning(
                "log %s: cut back to %d records (%s)",
                self.data.log_path,
                self.data.truncated["offset"],
                self.data.truncated["reason"],
            )

    # ------------------------------------------------------------------ running

    async def serve(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.stopping.set)
        raft_server = await asyncio.start_server(self._serve_peer, *self.options.raft_listen)
        client_server = await asyncio.start_server(self._serve_client, *self.options.client_listen)
        for link in self.links.values():
            link.task = self._start(link.run())
        ticker = self._start(self._tick_forever())
        flusher = self._start(self._flush_forever()) if self.config.flush_interval_ms else None
        checkpointer = self._start(self._checkpoint_forever())
        log.info("node %s generation %d serving", self.config.node_id, self.generation)
        try:
            await self.stopping.wait()
            if self.halted is None:
                with self._fatal():
                    self.core.resign(_now_ms())
                self._drain()
            await asyncio.sleep(0.05)
        finally:
            ticker.cancel()
            checkpointer.cancel()
            if flusher is not None:
                flusher.cancel()
            for link in self.links.values():
                if link.task is not None:
                    link.task.cancel()
            raft_server.close()
            client_server.close()
            self.events.close()
            if self.halted is None:
                self.data.close(clean=True)
            else:
                with contextlib.suppress(OSError):  # the write that failed is still buffered
                    self.data.close()

    async def _tick_forever(self) -> None:
        """The core's clock. A tick that comes a whole interval late (the
        process was stopped, or its loop held up) first lets the loop read
        what reached the node meanwhile, as the simulator delivers the
        messages due before any node ticks: a node back from a stall hears
        its leader, and answers the pre-votes waiting for it, before it
        judges its leader silent and stands. Which came first was a race."""
        interval = self.options.tick_ms / 1000
        while True:
            due = time.monotonic() + interval
            await asyncio.sleep(interval)
            if time.monotonic() - due > interval:
                for _ in range(READS_BEFORE_A_LATE_TICK):
                    await asyncio.sleep(0)
            with self._fatal():
                self.core.tick(_now_ms())
            self._kick()

    async def _flush_forever(self) -> None:
        """A follower's writes, fsynced every flush interval (`--flush-interval-ms`)."""
        interval = self.config.flush_interval_ms / 1000
        while self.halted is None:
            await asyncio.sleep(interval)
            try:
                self.data.sync()
            except OSError as error:
                self._halt(_written(error, self.data.log_path))
                return
            with self._fatal():
                self.core.synced(self.durable_end, _now_ms())
            self._kick()

    async def _checkpoint_forever(self) -> None:
        """The recovery point, moved up to what is fsynced, with the state
        machine as applied then, every `CHECKPOINT_S`."""
        while self.halted is None:
            await asyncio.sleep(CHECKPOINT_S)
            core = self.core
            snapshot = Snapshot(core.applied, core.log.epoch_at(core.applied - 1), dict(core.machine.registers))
            try:
                self.data.checkpoint(snapshot)
            except OSError as error:
                self._halt(_written(error, self.data.recovery_point_path))
                return

    def _kick(self) -> None:
        """Drain once after everything that arrived in this loop iteration:
        one fsync serves a whole batch (group commit)."""
        if not self.drain_scheduled:
            self.drain_scheduled = True
            asyncio.get_running_loop().call_soon(self._drain)

    def _drain(self) -> None:
        self.drain_scheduled = False
        with self._fatal():
            while self.halted is None and self.core.has_ready():
                ready = self.core.ready()
                try:
                    self._persist(ready)
                except OSError as error:
                    self._halt(_written(error, self.data.log_path))
                    return
                for event in ready.events:
                    self._write_event(event)
                    if event.get("event") == "caught-up":
                        self.data.caught_up()
                self.events.flush()
                for msg in ready.messages:
                    self._send(msg)
                for request_id, reply in ready.replies:
                    self._reply(request_id, reply)
                self.core.advance(ready, _now_ms())

    @contextlib.contextmanager
    def _fatal(self) -> Iterator[None]:
        """Around every call that changes the core: an exception out of it is
        a broken rule of the node's own, and the node halts (fail-stop, as
        KRaft exits on a fatal error) rather than go on from a state half
        changed, answering as if nothing happened."""
        try:
            yield
        except OSError as error:  # the data directory's, or the event log's
            self._halt(_written(error, self.data.log_path))
        except Exception as error:  # noqa: BLE001 - any defect of the core is fatal
            self._internal_error(error)

    def _start(self, work: Coroutine[Any, Any, None]) -> asyncio.Task:
        """A task of the node's own, which halts the node if it ends on an exception (`_ended`)."""
        task = asyncio.create_task(work)
        task.add_done_callback(self._ended)
        return task

    def _ended(self, task: asyncio.Task) -> None:
        """A task of the node's own (its timers, its links) that ends on an
        exception is a defect as much as one out of the core: without it the
        node would go on without its ticks, checkpoints or a peer's link,
        silently. It halts instead, as a Go server panics."""
        error = None if task.cancelled() else task.exception()
        if error is not None:
            self._internal_error(error)

    def _internal_error(self, error: BaseException) -> None:
        log.error("internal error", exc_info=error)
        self._halt(f"internal error: {type(error).__name__}: {error}")

    def _halt(self, reason: str) -> None:
        """A write to the data directory failed (a full disk, among others),
        or the core broke (`_fatal`): nothing that depends on it is sent or
        answered. Every waiting client gets the error (indeterminate: its
        command may have been written and sent before), the event log says
        why, and the node stops, as KRaft halts on a log I/O error. Nothing
        it acknowledged is lost: it acknowledges only what is durable."""
        if self.halted is not None:
            return
        self.halted = reason
        log.error("halting: %s", self.halted)
        for request_id in list(self.clients):
            self._reply(request_id, {"error": INDETERMINATE, "reason": f"halted: {self.halted}"})
        with contextlib.suppress(OSError):
            # The epoch it holds on disk: the core may have moved to one it could not write, and never acted in.
            epoch = self.data.election_state.epoch
            self._write_event({"event": "halted", "epoch": epoch, "reason": self.halted})
            self.events.flush()
        self.stopping.set()

    def _persist(self, ready: Ready) -> None:
        if ready.election_state is not None:
            self.data.write_election_state(ready.election_state)
        if ready.entries or ready.log_from < self.durable_end:
            self.data.write_log(ready.log_from, ready.entries, sync=ready.sync)
            self.durable_end = ready.log_from + len(ready.entries)
        elif ready.sync:
            self.data.sync()

    def _write_event(self, event: dict) -> None:
        record = {
            "ts_ns": true_time_ns(),
            "node": self.config.node_id,
            "generation": self.generation,
            "directory_id": self.data.directory_id,
            **event,
        }
        self.events.write(json.dumps(record) + "\n")

    def _send(self, msg: Message) -> None:
        link = self.links.get(msg.dst)
        if link is not None:
            link.send((json.dumps(encode(msg), separators=(",", ":")) + "\n").encode())

    # ------------------------------------------------------------------ peers

    async def _serve_peer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while line := await reader.readline():
                try:
                    msg = decode(json.loads(line))
                except (ValueError, TypeError, KeyError) as error:
                    log.warning("dropping a malformed peer message: %s", error)
                    continue
                with self._fatal():
                    self.core.step(msg, _now_ms())
                self._kick()
        except (OSError, asyncio.IncompleteReadError, ValueError):
            pass
        finally:
            writer.close()

    # ------------------------------------------------------------------ clients

    async def _serve_client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        mine: list[int] = []
        try:
            while line := await reader.readline():
                self._handle_client_line(line, writer, mine)
                await writer.drain()
        except (OSError, ValueError):
            pass
        finally:
            for request_id in mine:
                self.clients.pop(request_id, None)
            writer.close()

    def _handle_client_line(self, line: bytes, writer: asyncio.StreamWriter, mine: list[int]) -> None:
        try:
            request = json.loads(line)
            if not isinstance(request, dict):
                raise ValueError("a request is a JSON object")
        except ValueError as error:
            writer.write(_line({"id": None, "error": "bad-request", "detail": str(error)}))
            return
        client_id = request.get("id")
        op = request.get("op")
        if op == "status":
            # Only what is durable is said: what the core has ready is written first (a write that
            # fails halts the node), and a halted node's core may hold an epoch it never wrote.
            self._drain()
            answer = {"error": "halted", "reason": self.halted} if self.halted is not None else self.status()
            writer.write(_line({"id": client_id, **answer}))
        elif op == "log":
            writer.write(_line({"id": client_id, "records": self._committed_records(request.get("from", 0))}))
        elif op in _COMMANDS and self.halted is not None:
            writer.write(_line({"id": client_id, "error": "halted", "reason": self.halted}))
        elif op in _COMMANDS:
            needed, optional = _COMMANDS[op]
            missing = [name for name in needed if name not in request]
            if missing:
                writer.write(_line({"id": client_id, "error": "bad-request", "detail": f"{op} needs {missing}"}))
                return
            request_id = next(self.request_ids)
            self.clients[request_id] = (writer, client_id)
            mine.append(request_id)
            command = {"op": op, **{name: request[name] for name in (*needed, *optional) if name in request}}
            with self._fatal():
                self.core.submit(request_id, command, _now_ms())
            self._kick()
        else:
            writer.write(_line({"id": client_id, "error": "bad-request", "detail": f"unknown op {op!r}"}))

    def _reply(self, request_id: Any, reply: dict) -> None:
        client = self.clients.pop(request_id, None)
        if client is None:
            return
        writer, client_id = client
        if not writer.is_closing():
            writer.write(_line({"id": client_id, **reply}))

    def status(self) -> dict:
        return {
            **self.core.status(),
            "generation": self.generation,
            "directory_id": self.data.directory_id,
        }

    def _committed_records(self, start: Any) -> list[dict]:
        start = start if isinstance(start, int) else 0
        return [
            {"offset": offset, "epoch": entry.epoch, "data": entry.data}
            for offset, entry in self.core.committed_entries(start, LOG_READ_LIMIT)
        ]


def _line(obj: dict) -> bytes:
    return (json.dumps(obj, separators=(",", ":")) + "\n").encode()


def _written(error: OSError, default: object) -> str:
    """Why a write to the data directory failed, and where."""
    return f"{error.strerror or error} writing {error.filename or default}"
