"""How etcd 3.4's peer traffic (rafthttp) splits into Raft messages, for
message faults on its links. Standard library only: a link proxy imports it.

A connection between members carries HTTP/1.1 both ways. The dialling
member sends requests (`up`): pipeline posts (`POST /raft`, one
`raftpb.Message` a body), stream requests, probes. The dialled member
answers (`down`), and a stream's answer never ends: it is the dialled
member's messages to the dialler, in chunks.
- `/raft/stream/message/ID`: each message an 8-byte big-endian length and a
  `raftpb.Message`. Each becomes one unit here, its own chunk (HTTP leaves
  chunk boundaries free, and etcd writes one message a chunk anyway), so a
  message can be dropped, held or repeated and the stream stays whole.
- `/raft/stream/msgapp/ID` (msgappv2): appends whose encoding leans on the
  one before (an entries-only frame carries no term or index). Losing one
  would corrupt the stream, so its chunks pass as bytes, never as messages:
  appends are faulted where they travel as whole messages.
Everything that is no message (HTTP heads, probes, msgappv2 chunks) is a
unit of kind "", which a proxy passes as it is. Bytes this cannot frame
turn the connection to passing bytes through, and `unframed` says why.
A unit is `(bytes, kind, fields)`, kinds from history/messages.py.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

Unit = tuple[bytes, str, dict[str, Any]]
# raftpb.MessageType, by number.
TYPES = (
    "MsgHup",
    "MsgBeat",
    "MsgProp",
    "MsgApp",
    "MsgAppResp",
    "MsgVote",
    "MsgVoteResp",
    "MsgSnap",
    "MsgHeartbeat",
    "MsgHeartbeatResp",
    "MsgUnreachable",
    "MsgSnapStatus",
    "MsgCheckQuorum",
    "MsgTransferLeader",
    "MsgTimeoutNow",
    "MsgReadIndex",
    "MsgReadIndexResp",
    "MsgPreVote",
    "MsgPreVoteResp",
)
# Each type of message and the kind it is (what travels between members; a forwarded proposal is `other`).
KINDS = {
    "MsgApp": "append",
    "MsgAppResp": "append-answer",
    "MsgVote": "vote-request",
    "MsgVoteResp": "vote-answer",
    "MsgPreVote": "vote-request",
    "MsgPreVoteResp": "vote-answer",
    "MsgSnap": "append",
    "MsgHeartbeat": "heartbeat",
    "MsgHeartbeatResp": "heartbeat-answer",
    "MsgReadIndex": "read-index",
    "MsgReadIndexResp": "read-index-answer",
    "MsgTimeoutNow": "leader-notice",
    "MsgProp": "other",
    "MsgTransferLeader": "other",
}
MESSAGE_STREAM, MSGAPP_STREAM, PIPELINE = "/raft/stream/message/", "/raft/stream/msgapp/", "/raft"
# A head longer than this, or a message longer than this, is no etcd peer traffic.
MAX_HEAD, MAX_MESSAGE = 64 * 1024, 512 * 1024 * 1024


class Unframed(Exception):
    """Bytes that are not the HTTP or the messages expected here."""


def message_fields(body: bytes) -> tuple[str, dict[str, Any]]:
    """A raftpb.Message's kind and what a history row names of it: its
    type, term (`epoch`), index (`offset`), commit (`hwm`), how many
    entries, and for votes whether pre-vote and granted."""
    numbers: dict[int, int] = {}
    entries = 0
    at = 0
    while at < len(body):
        key, at = _varint(body, at)
        field, wire = key >> 3, key & 7
        if wire == 0:
            numbers[field], at = _varint(body, at)
        elif wire == 2:
            size, at = _varint(body, at)
            at += size
            entries += field == 7
        else:
            raise Unframed(f"a raftpb.Message field of wire type {wire}")
    if at != len(body) or numbers.get(1, 0) >= len(TYPES):
        raise Unframed("no raftpb.Message")
    name = TYPES[numbers.get(1, 0)]
    fields: dict[str, Any] = {"type": name, "epoch": numbers.get(4, 0), "offset": numbers.get(6, 0)}
    fields["hwm"] = numbers.get(8, 0)
    if entries:
        fields["entries"] = entries
    if name in ("MsgVote", "MsgPreVote", "MsgVoteResp", "MsgPreVoteResp"):
        fields["pre_vote"] = name.startswith("MsgPre")
    if name in ("MsgVoteResp", "MsgPreVoteResp"):
        fields["granted"] = not numbers.get(10, 0)
    return KINDS.get(name, "other"), fields


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if at >= len(data) or shift > 63:
            raise Unframed("a cut varint")
        byte = data[at]
        value |= (byte & 0x7F) << shift
        at, shift = at + 1, shift + 7
        if byte < 0x80:
            return value, at


class Connection:
    """One TCP connection between two members, both ways: feed `up` what
    the dialler sent and `down` what the dialled answered, as read; each
    returns the units now whole, in order."""

    def __init__(self) -> None:
        self.paths: deque[str] = deque()  # the requests not yet answered, in order
        self.unframed: str | None = None
        self.up_side = _Side(self._request)
        self.down_side = _Side(self._response)

    def up(self, data: bytes) -> list[Unit]:
        return self._feed(self.up_side, data)

    def down(self, data: bytes) -> list[Unit]:
        return self._feed(self.down_side, data)

    def _feed(self, side: _Side, data: bytes) -> list[Unit]:
        if self.unframed:
            return [(data, "", {})] if data else []
        try:
            return side.feed(data)
        except Unframed as why:
            self.unframed = str(why)
            rest, side.buffer = side.buffer, b""
            return [(rest, "", {})] if rest else []

    def _request(self, side: _Side, method: str, path: str, headers: dict[str, str]) -> None:
        """A request's body: a pipeline message is one unit with its head."""
        self.paths.append(path)
        side.after_head(headers, message=method == "POST" and path == PIPELINE)

    def _response(self, side: _Side, _version: str, status: str, headers: dict[str, str]) -> None:
        if not self.paths:
            raise Unframed("an answer to no request")
        path = self.paths.popleft()
        if status.startswith("1"):  # (an interim answer: the real one follows)
            self.paths.appendleft(path)
        stream = status == "200" and path.startswith(MESSAGE_STREAM)
        side.after_head(headers, stream=stream)


class _Side:
    """One direction of a connection: HTTP heads, then each body as the
    connection's `on_head` says (one unit; a stream of messages; chunks)."""

    def __init__(self, on_head: Callable[[_Side, str, str, dict[str, str]], None]) -> None:
        self.on_head = on_head
        self.buffer = b""
        self.head: bytes | None = None  # a head read whose unit waits for its body
        self.body: int | None = None  # bytes of a Content-Length body still to come
        self.message = False  # the body is one raftpb.Message (a pipeline post)
        self.chunked = False
        self.stream = False  # the chunks carry length-prefixed messages
        self.payload = b""  # a stream's chunk data not yet whole messages

    def feed(self, data: bytes) -> list[Unit]:
        self.buffer += data
        units: list[Unit] = []
        while (unit := self._next()) is not None:
            units += unit
        return units

    def after_head(self, headers: dict[str, str], message: bool = False, stream: bool = False) -> None:
        self.chunked = headers.get("transfer-encoding", "").lower() == "chunked"
        length = headers.get("content-length")
        if not self.chunked and length is not None and not length.isdigit():
            raise Unframed(f"a Content-Length of {length!r}")
        self.body = None if self.chunked else int(length or 0)
        self.message, self.stream = message, stream and self.chunked

    def _next(self) -> list[Unit] | None:
        """The units the buffer's front makes whole, or None until more comes."""
        if self.head is None and not self.chunked:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                if len(self.buffer) > MAX_HEAD:
                    raise Unframed("no HTTP head")
                return None
            self.head, self.buffer = self.buffer[: end + 4], self.buffer[end + 4 :]
            first, *lines = self.head[:-4].decode("latin-1").split("\r\n")
            parts = first.split(" ", 2)
            if len(parts) < 2 or not all(":" in line for line in lines):
                raise Unframed(f"no HTTP head: {first[:40]!r}")
            headers = {name.strip().lower(): value.strip() for name, value in (line.split(":", 1) for line in lines)}
            self.on_head(self, parts[0], parts[1], headers)
            if self.chunked:
                head, self.head = self.head, None
                return [(head, "", {})]
        if self.head is not None:
            return self._whole_body()
        return self._chunk()

    def _whole_body(self) -> list[Unit] | None:
        """A head and its Content-Length body, one unit (a pipeline message's kind, if it is one)."""
        assert self.head is not None and self.body is not None
        if len(self.buffer) < self.body:
            return None
        body, self.buffer = self.buffer[: self.body], self.buffer[self.body :]
        unit = self.head + body
        self.head = None
        if self.message and body:
            return [(unit, *message_fields(body))]
        return [(unit, "", {})]

    def _chunk(self) -> list[Unit] | None:
        """The next chunk: its messages (a stream), or itself; the last chunk ends the body."""
        end = self.buffer.find(b"\r\n")
        if end < 0:
            if len(self.buffer) > 32:
                raise Unframed("no chunk size")
            return None
        size_text = self.buffer[:end].split(b";")[0].strip()
        try:
            size = int(size_text, 16)
        except ValueError:
            raise Unframed(f"a chunk size of {size_text[:20]!r}") from None
        if size == 0:  # the last chunk, and its empty trailer
            if len(self.buffer) < end + 4:
                return None
            last, self.buffer = self.buffer[: end + 4], self.buffer[end + 4 :]
            self.chunked = self.stream = False
            return [(last, "", {})]
        whole = end + 2 + size + 2
        if len(self.buffer) < whole:
            return None
        if self.buffer[whole - 2 : whole] != b"\r\n":
            raise Unframed("a chunk not ended by CRLF")
        chunk, self.buffer = self.buffer[:whole], self.buffer[whole:]
        if not self.stream:
            return [(chunk, "", {})]
        self.payload += chunk[end + 2 : -2]
        return self._messages()

    def _messages(self) -> list[Unit]:
        """The stream's whole messages, each re-chunked alone; what is left of one stays."""
        units: list[Unit] = []
        while len(self.payload) >= 8:
            size = int.from_bytes(self.payload[:8], "big")
            if size > MAX_MESSAGE:
                raise Unframed(f"a message of {size} bytes")
            if len(self.payload) < 8 + size:
                break
            frame, self.payload = self.payload[: 8 + size], self.payload[8 + size :]
            units.append((b"%x\r\n" % len(frame) + frame + b"\r\n", *message_fields(frame[8:])))
        return units
