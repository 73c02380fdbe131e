"""Links of a local cluster whose members dial one advertised peer address
each (etcd: `Capabilities.peer_routes` is false), so that no directed link
has a proxy of its own.

Each node gets one front listener on 127.0.0.1, and advertises it as its
peer address. The front names the node at the other end of every
connection it accepts: the connecting socket is found in `/proc/net/tcp`
by both its addresses (an ephemeral port alone is reused across
destinations), its inode under `/proc/<pid>/fd` of this cluster's own node
processes, and so the node. It then forwards the connection to the node's
real peer port, unless that pair of nodes is cut.

A TCP connection between two etcd members carries messages both ways (a
stream is opened by the member that receives on it), so a cut here is
always both ways: `cut` refuses a one-way link, and `RunConfig` keeps such
topologies out of the schedule before the run. On a cut, the pair's live
connections are closed and new ones are accepted and closed at once (etcd
redials every 100 ms).

Given the target's framing, the fronts also take `message` toxics, per
directed link: the messages from A to B are those A sends on connections it
dialled to B and those it answers on connections B dialled to it (an etcd
stream is opened by its receiver), each way of a connection cut into
messages by one framer (harness/toxiproxy/messages.py). A connection whose
bytes cannot be framed passes them as they are, and the run says so once.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import socket
import sys
import threading
from collections.abc import Iterable
from pathlib import Path

from harness.interrupts import ended, heard
from harness.link_applier import Link, LinkApplier
from harness.ports import free_port
from harness.toxiproxy.messages import Framer, LinkCount, MessageStream, load_framing
from harness.toxiproxy.toxics import InvalidToxic, Tally, Toxic
from history.errors import SettingError

CONNECT_TIMEOUT_S = 2.0
CHUNK = 65536


def _hex_address(host: str, port: int) -> str:
    """An IPv4 address as /proc/net/tcp writes it (little-endian on x86)."""
    return f"{int.from_bytes(socket.inet_aton(host), 'little'):08X}:{port:04X}"


def socket_inode(local: tuple[str, int], remote: tuple[str, int], proc: Path = Path("/proc")) -> int | None:
    """The inode of the TCP socket bound to `local` and connected to `remote`."""
    want = (_hex_address(*local), _hex_address(*remote))
    for table in ("net/tcp", "net/tcp6"):
        try:
            lines = (proc / table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if table == "net/tcp6":  # an IPv4-mapped address: ::ffff:a.b.c.d
                fields[1:3] = [
                    f[24:32] + f[32:] if f.startswith("0000000000000000FFFF0000") else f for f in fields[1:3]
                ]
            if (fields[1], fields[2]) == want:
                return int(fields[9])
    return None


def live_pids(processes: dict) -> dict[int, str]:
    """pid -> node of the nodes' processes still running. The fronts ask on
    their own thread while the nemesis starts and kills nodes on another: the
    dict is copied in one step before it is walked."""
    return {process.pid: node for node, process in list(processes.items()) if process.poll() is None}


def holder(inode: int, pids: dict[int, str], proc: Path = Path("/proc")) -> str | None:
    """Which of `pids` (pid -> node) holds the socket `inode`."""
    link = f"socket:[{inode}]"
    for pid, node in pids.items():
        try:
            fds = os.listdir(proc / str(pid) / "fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(proc / str(pid) / "fd" / fd) == link:
                    return node
            except OSError:
                continue
    return None


class AttributedLinks(LinkApplier):
    def __init__(self, cluster, framing: str = "") -> None:
        self.cluster = cluster
        self.framer = load_framing(framing) if framing else None
        self.toxics: dict[Link, dict[str, Toxic]] = {}
        self.counts: dict[Link, LinkCount] = {}
        self.rng = random.Random(0)
        self.said_unframed = False
        self.links = [(i, j) for i in cluster.ids for j in cluster.ids if i != j]
        self.fronts = {node: ("127.0.0.1", free_port()) for node in cluster.ids}
        self.cut_pairs: set[frozenset[str]] = set()
        self.live: dict[frozenset[str | None], set[asyncio.StreamWriter]] = {}
        self.closing = False
        self.loop = asyncio.new_event_loop()
        self.loop.set_exception_handler(heard)
        self.servers: list[asyncio.base_events.Server] = []
        self.thread = threading.Thread(target=self.loop.run_forever, name="attributed-links", daemon=True)
        self.thread.start()
        self._call(self._listen())

    def _call(self, coroutine):
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(10)

    async def _listen(self) -> None:
        for node, (host, port) in self.fronts.items():
            serve = lambda reader, writer, node=node: self._accept(node, reader, writer)  # noqa: E731
            self.servers.append(await asyncio.start_server(serve, host, port, reuse_address=True))

    def source(self, writer: asyncio.StreamWriter) -> str | None:
        """The node that opened this connection, or None if none of ours did."""
        inode = socket_inode(writer.get_extra_info("peername")[:2], writer.get_extra_info("sockname")[:2])
        if inode is None:
            return None
        return holder(inode, live_pids(self.cluster.processes))

    async def _accept(self, node: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Forward one connection; cancelled (as the fronts close), it ends
        as if the connection had: Python 3.11's stream server prints a
        traceback for a handler that ends cancelled."""
        with contextlib.suppress(asyncio.CancelledError):
            await self._forward(node, reader, writer)

    async def _forward(self, node: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        source = self.source(writer)
        pair = frozenset((source, node))
        if pair in self.cut_pairs or self.closing:
            writer.close()
            return
        try:
            up_reader, up_writer = await asyncio.wait_for(
                asyncio.open_connection(*self.cluster.raft[node]), CONNECT_TIMEOUT_S
            )
        except (TimeoutError, OSError):
            writer.close()
            return
        live = self.live.setdefault(pair, set())  # (None, node): a connection from no node of ours
        live.update((writer, up_writer))
        there: tuple[Framer, str, Link] | None = None
        back: tuple[Framer, str, Link] | None = None
        if self.framer is not None and source is not None:  # (framed: a framing given, both ends our nodes)
            framer = self.framer()
            there, back = (framer, "up", (source, node)), (framer, "down", (node, source))
        try:
            if not self.closing:  # (the fronts may have closed while it connected)
                await asyncio.gather(self._pump(reader, up_writer, there), self._pump(up_reader, writer, back))
        finally:
            live.difference_update((writer, up_writer))
            self._close(writer)
            self._close(up_writer)

    async def _pump(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        framed: tuple[Framer, str, Link] | None = None,
    ) -> None:
        """One way of a connection; `framed`: its framer, which way it is and
        whose messages it carries, which then pass through that link's message toxics."""
        messages = None
        if framed is not None:
            framer, way, link = framed
            messages = MessageStream(
                getattr(framer, way), self.counts.setdefault(link, LinkCount()), writer.write, self.rng
            )
        try:
            while data := await reader.read(CHUNK):
                if messages is None:
                    writer.write(data)
                else:
                    for chunk in messages.feed(data, list(self.toxics.get(link, {}).values())):
                        writer.write(chunk)
                    self._say_unframed(framer, link)
                await writer.drain()
        except OSError:
            pass
        finally:
            if messages is not None:
                messages.close()
            self._close(writer)

    def _close(self, writer: asyncio.StreamWriter) -> None:
        """Close a connection, unless the loop is gone: a handler that Python
        finalises at exit, after the loop was closed, would only print "Event
        loop is closed" (the process's exit closes the socket anyway)."""
        if not self.loop.is_closed():
            writer.close()

    # ------------------------------------------------------------------ the applier's interface

    def cut(self, links: Iterable[Link]) -> list[Link]:
        links = sorted(set(links))
        one_way = [(src, dst) for src, dst in links if (dst, src) not in links]
        if one_way:
            raise SettingError(
                "nemesis", f"cannot cut {one_way[0][0]}->{one_way[0][1]} one way: this target's links are cut per pair"
            )
        self._call(self._cut({frozenset(link) for link in links}))
        return links

    async def _cut(self, pairs: set[frozenset[str]]) -> None:
        self.cut_pairs |= pairs
        for pair in pairs:
            for writer in list(self.live.get(pair, ())):
                writer.transport.abort()

    def restore(self, links: Iterable[Link]) -> None:
        self._call(self._restore({frozenset(link) for link in links}))

    async def _restore(self, pairs: set[frozenset[str]]) -> None:
        self.cut_pairs -= pairs

    def _say_unframed(self, framer: Framer, link: Link) -> None:
        if framer.unframed and not self.said_unframed:
            self.said_unframed = True
            print(
                f"splitbrain: {link[0]}->{link[1]}: peer bytes not framed ({framer.unframed}): "
                "that connection passes them as they are, with no message faults",
                file=sys.stderr,
            )

    def add_toxic(self, links, type: str, attributes: dict, name: str | None = None) -> list[Link]:
        """A `message` toxic on these directed links (with the target's
        framing); its `group` counts their messages together, as the proxies' do."""
        if type != "message" or self.framer is None:
            raise SettingError("nemesis", f"this target's links can only be cut, both ways: no {type} toxic")
        links = sorted(set(links))
        try:
            made = [Toxic.from_json({"name": name, "type": type, "attributes": attributes}) for _ in links]
        except InvalidToxic as error:
            raise SettingError("nemesis", str(error)) from None
        tally = Tally()
        for toxic in made:
            if toxic.attributes["group"]:
                toxic.tally = tally
        self._call(self._add(dict(zip(links, made))))
        return links

    async def _add(self, made: dict[Link, Toxic]) -> None:
        for link, toxic in made.items():
            self.toxics.setdefault(link, {})[toxic.name] = toxic

    def applied(self, links: Iterable[Link], name: str) -> dict[Link, list[dict]]:
        """The messages the toxic `name` acted on, on each of these links."""
        return self._call(self._applied(sorted(links), name))

    async def _applied(self, links: list[Link], name: str) -> dict[Link, list[dict]]:
        found = {link: self.toxics.get(link, {}).get(name) for link in links}
        return {link: list(toxic.applied) if toxic else [] for link, toxic in found.items()}

    def update_toxic(self, links: Iterable[Link], name: str, attributes: dict) -> None:
        self._call(self._update(sorted(links), name, attributes))

    async def _update(self, links: list[Link], name: str, attributes: dict) -> None:
        for link in links:
            toxic = self.toxics.get(link, {}).get(name)
            if toxic is not None:
                toxic.update_attributes(attributes)

    def remove_toxic(self, links: Iterable[Link], name: str) -> None:
        self._call(self._remove_toxic(sorted(links), name))

    async def _remove_toxic(self, links: list[Link], name: str) -> None:
        for link in links:
            self.toxics.get(link, {}).pop(name, None)

    def heal(self) -> None:
        self._call(self._heal())

    async def _heal(self) -> None:
        self.cut_pairs.clear()
        self.toxics.clear()

    def remove(self) -> None:
        """Close the fronts and every connection through them; stop the
        thread and close its loop, no task of it left pending (at exit
        asyncio would warn of each: "Task was destroyed but it is pending!")."""
        if not self.loop.is_running():
            return
        self._call(self._shut())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
        if not self.thread.is_alive():
            self.loop.close()

    async def _shut(self) -> None:
        """Every connection ended: those live aborted, and those a front had
        accepted but not yet forwarded (etcd redials every 100 ms) closed as
        they come to forward, or cancelled."""
        self.closing = True
        for server in self.servers:
            server.close()
        for writers in self.live.values():
            for writer in list(writers):
                writer.transport.abort()
        await ended(task for task in asyncio.all_tasks() if task is not asyncio.current_task())
