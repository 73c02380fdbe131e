"""One Toxiproxy proxy: a TCP listener forwarding each connection to its
upstream through the toxics of each direction (`upstream` is client to
server, `downstream` server to client). Disabling a proxy closes its listener
and every live connection, as Toxiproxy does: that is how a link is cut. It
keeps its port bound while disabled (a connection is refused, as with no
listener): outgoing connections take their ports from the range the proxies'
ports came from, and one given a cut link's port would keep the heal from
listening there again.

A proxy given a `framing` (splitbrain's own field: a target's module that
splits its traffic into messages) counts the messages on its link, and
`message` toxics act on whole ones (messages.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import socket
import struct
import time

from .messages import LinkCount, MessageStream, load_framing
from .toxics import CloseConnection, Toxic, ToxicState, _LimitReached

CHUNK = 65536
CONNECT_TIMEOUT_S = 2.0
TIMER_POLL_S = 0.01


def split_address(text: str) -> tuple[str, int]:
    host, sep, port = str(text).rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise ValueError(f"expected HOST:PORT with a port from 0 to 65535, got {text!r}")
    return host or "127.0.0.1", int(port)


def _bound(address: str) -> socket.socket:
    """A socket bound to `address` (port 0: one the system chooses), not listening."""
    host, port = split_address(address)
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    return sock


def _reset(writer: asyncio.StreamWriter) -> None:
    sock = writer.get_extra_info("socket")
    if sock is not None:
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass
    writer.transport.abort()


class Connection:
    def __init__(self, proxy: Proxy, client: tuple[asyncio.StreamReader, asyncio.StreamWriter]) -> None:
        self.proxy = proxy
        self.client_reader, self.client_writer = client
        self.upstream_writer: asyncio.StreamWriter | None = None
        self.states: dict[str, ToxicState] = {}
        self.framer = proxy.framer() if proxy.framer else None
        self.task: asyncio.Task | None = None
        for toxic in proxy.toxics.values():
            self.add(toxic)

    def add(self, toxic: Toxic) -> None:
        self.states[toxic.name] = ToxicState(toxic, time.monotonic(), self.proxy.rng)

    def remove(self, name: str) -> None:
        self.states.pop(name, None)

    def _stream_states(self, stream: str) -> list[ToxicState]:
        return [state for state in self.states.values() if state.toxic.stream == stream]

    async def run(self) -> None:
        reset = False
        try:
            upstream_reader, upstream_writer = await asyncio.wait_for(
                asyncio.open_connection(*split_address(self.proxy.upstream)), CONNECT_TIMEOUT_S
            )
        except (TimeoutError, OSError):
            self.client_writer.close()
            return
        self.upstream_writer = upstream_writer
        pumps = [
            asyncio.create_task(self._pump(self.client_reader, upstream_writer, "upstream")),
            asyncio.create_task(self._pump(upstream_reader, self.client_writer, "downstream")),
            asyncio.create_task(self._timers()),
        ]
        try:
            done, _ = await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                error = task.exception()
                if isinstance(error, CloseConnection):
                    reset = error.reset
        finally:
            for task in pumps:
                task.cancel()
            self.close(reset)

    def close(self, reset: bool = False) -> None:
        for writer in (self.client_writer, self.upstream_writer):
            if writer is None:
                continue
            if reset:
                _reset(writer)
            else:
                writer.close()

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, stream: str) -> None:
        messages = None
        if self.framer is not None:
            frame = self.framer.up if stream == "upstream" else self.framer.down
            messages = MessageStream(frame, self.proxy.count, writer.write, self.proxy.rng)
        try:
            await self._forward(reader, writer, stream, messages)
        finally:
            if messages is not None:
                messages.close()

    async def _forward(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, stream: str, messages: MessageStream | None
    ) -> None:
        rng = self.proxy.rng
        while True:
            try:
                data = await reader.read(CHUNK)
            except OSError:
                return
            states = self._stream_states(stream)
            if not data:
                delay = max((state.close_delay_s() for state in states), default=0.0)
                if delay:
                    await asyncio.sleep(delay)
                return
            if messages is None:
                chunks = [data]
            else:
                faults = [state.toxic for state in states if state.active and state.toxic.type == "message"]
                chunks = messages.feed(data, faults)
            if not chunks:
                continue
            try:
                for state in states:
                    chunks = await state.transform(chunks, rng)
            except _LimitReached as limit:
                writer.write(limit.last)
                await writer.drain()
                raise
            slice_delay = max((state.slice_delay_s() for state in states), default=0.0)
            for chunk in chunks:
                writer.write(chunk)
                if slice_delay:
                    await writer.drain()
                    await asyncio.sleep(slice_delay)
            try:
                await writer.drain()
            except OSError:
                return

    async def _timers(self) -> None:
        while True:
            now = time.monotonic()
            for state in list(self.states.values()):
                deadline = state.deadline_s()
                if deadline is not None and now >= deadline:
                    state.fire()
            await asyncio.sleep(TIMER_POLL_S)


class Proxy:
    def __init__(
        self, name: str, listen: str, upstream: str, enabled: bool = True, seed: int | None = None, framing: str = ""
    ) -> None:
        split_address(listen)
        split_address(upstream)
        self.framing = framing
        self.framer = load_framing(framing) if framing else None
        self.count = LinkCount()
        self.name = name
        self.listen = listen
        self.upstream = upstream
        self.enabled = enabled
        self.toxics: dict[str, Toxic] = {}
        self.rng = random.Random(seed)
        self.server: asyncio.base_events.Server | None = None
        self.held: socket.socket | None = None  # its port, bound while it does not listen
        self.connections: set[Connection] = set()

    def to_json(self) -> dict:
        return {
            "name": self.name,
            "listen": self.listen,
            "upstream": self.upstream,
            "enabled": self.enabled,
            "toxics": [toxic.to_json() for toxic in self.toxics.values()],
            **({"framing": self.framing, "messages": self.count.framed} if self.framing else {}),
        }

    async def start(self) -> None:
        """Listen (if enabled), on the port it holds; a port of 0 becomes the port the system chose."""
        if not self.enabled or self.server is not None:
            return
        host, _ = split_address(self.listen)
        sock, self.held = self.held or _bound(self.listen), None
        sock.listen(socket.SOMAXCONN)
        self.server = await asyncio.start_server(self._accept, sock=sock)
        self.listen = f"{host}:{sock.getsockname()[1]}"

    async def stop(self) -> None:
        """Stop listening, holding on to the port, and drop every live connection."""
        if self.server is not None:
            self.server.close()  # closes the listening socket at once
            with contextlib.suppress(OSError):  # taken in that instant: the next start binds it afresh, or says why not
                self.held = _bound(self.listen)
            await self.server.wait_closed()
            self.server = None
        for connection in list(self.connections):
            connection.close()
            if connection.task is not None:
                connection.task.cancel()
        self.connections.clear()

    async def close(self) -> None:
        """Stop, and let the port go (the proxy is deleted, or moves)."""
        await self.stop()
        if self.held is not None:
            self.held.close()
            self.held = None

    async def set_enabled(self, enabled: bool) -> None:
        self.enabled = enabled
        await (self.start() if enabled else self.stop())

    def add_toxic(self, toxic: Toxic) -> None:
        self.toxics[toxic.name] = toxic
        for connection in self.connections:
            connection.add(toxic)

    def remove_toxic(self, name: str) -> None:
        del self.toxics[name]
        for connection in self.connections:
            connection.remove(name)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connection = Connection(self, (reader, writer))
        connection.task = asyncio.current_task()
        self.connections.add(connection)
        try:
            await connection.run()
        finally:
            self.connections.discard(connection)
