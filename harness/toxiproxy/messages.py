"""Faults on whole messages: what a proxy that knows its traffic's framing
does to each message of one direction of one connection, under the
`message` toxics on that direction (toxics.py).

The TCP connection stays up: a dropped message is cut out of the byte
stream at its boundaries, a duplicated one is sent twice, and a held one is
sent later, after the messages that follow it (for `hold_ms`, or until a
message of the kind named passes: a reorder is a hold until the next
message of any kind). This is what the simulator does to a message, and a
cut link, which closes every connection on it, cannot.

A toxic may wait for a moment: it acts only after a message of one of
its `after` kinds has passed on its group's links, and no more once one of
its `before` kinds has passed since (a vote in flight: after a vote
request, before its answer). Every message through a toxic's links moves
its moment, whatever kind the toxic acts on.

Each message a toxic acts on is put on the toxic's `applied` list with its
ordinal on the link (the proxy counts every message it frames), its kind
and what its framing read of it, for the nemesis's history row. A message
held when its connection closes is lost with the connection.

A target's framing module cuts a connection either with its `Connection`
(both ways at once, keeping what it needs between them: etcd's answers are
framed by the request they answer) or with `split(buffer)`, applied to
each way alike. A unit of kind "" is no message (an HTTP head, say): it
passes as it is, uncounted.
"""

from __future__ import annotations

import asyncio
import importlib
import random
import time
from collections.abc import Callable
from functools import partial
from typing import Any, Protocol

from .toxics import Toxic

Framed = tuple[bytes, str, dict[str, Any]]
Split = Callable[[bytes], tuple[list[Framed], bytes]]
Frame = Callable[[bytes], list[Framed]]


class Framer(Protocol):
    """One connection's framing: each way's bytes as read, into units; `unframed`: why it gave up, if it did."""

    unframed: str | None

    def up(self, data: bytes) -> list[Framed]: ...

    def down(self, data: bytes) -> list[Framed]: ...


class SplitFramer:
    """A framing given as `split(buffer)`, each way keeping what is left of
    a message. A split that raises ValueError (bytes it cannot frame) turns
    the connection to passing its bytes as they are, `unframed` saying why."""

    def __init__(self, split: Split) -> None:
        self.split = split
        self.left = {"up": b"", "down": b""}
        self.unframed: str | None = None

    def up(self, data: bytes) -> list[Framed]:
        return self._cut("up", data)

    def down(self, data: bytes) -> list[Framed]:
        return self._cut("down", data)

    def _cut(self, way: str, data: bytes) -> list[Framed]:
        if self.unframed:
            return [(data, "", {})] if data else []
        try:
            messages, self.left[way] = self.split(self.left[way] + data)
        except ValueError as why:
            self.unframed = str(why)
            rest, self.left[way] = self.left[way] + data, b""
            return [(rest, "", {})] if rest else []
        return messages


def load_framing(name: str) -> Callable[[], Framer]:
    """What makes each connection's framer for the framing module `name` (a
    target's, by its dotted name): its `Connection`, or its `split`; ValueError if it has neither."""
    try:
        module = importlib.import_module(name)
    except ImportError as error:
        raise ValueError(f"framing {name!r} cannot be imported: {error}") from None
    connection = getattr(module, "Connection", None)
    if isinstance(connection, type):
        return connection
    split = getattr(module, "split", None)
    if not callable(split):
        raise ValueError(f"framing {name!r} has neither a Connection nor a split(buffer)")
    return partial(SplitFramer, split)


class LinkCount:
    """The messages a proxy has framed on its link, over all its connections."""

    def __init__(self) -> None:
        self.framed = 0

    def next(self) -> int:
        self.framed += 1
        return self.framed


class MessageStream:
    """One direction of one connection, cut into messages by `frame` (its
    framer's `up` or `down`): `feed` takes the bytes read and the message
    toxics in force, and returns those to send now; `write` sends a held
    message when its time comes."""

    def __init__(
        self, frame: Frame, count: LinkCount, write: Callable[[bytes], None], rng: random.Random | None = None
    ) -> None:
        self.frame = frame
        self.rng = rng or random.Random(0)
        self.count = count
        self.write = write
        self.held: list[tuple[bytes, str]] = []  # (message, the kind whose passing sends it)
        self.timers: list[asyncio.TimerHandle] = []

    def feed(self, data: bytes, faults: list[Toxic]) -> list[bytes]:
        out: list[bytes] = []
        for message, kind, fields in self.frame(data):
            if not kind:  # (no message: a framing's own bytes)
                out.append(message)
                continue
            ordinal = self.count.next()
            released = self._released_by(kind)  # (before this message's own hold: a later one releases it)
            toxic = next((toxic for toxic in faults if _takes(toxic, kind, self.rng)), None)
            if toxic is None:
                out.append(message)
            else:
                toxic.applied.append({"ordinal": ordinal, "kind": kind, "wall_ns": time.time_ns(), **fields})
                toxic.tally.acted += 1
                out += self._act(toxic, message)
            for each in faults:
                _moment(each, kind, passed=each is not toxic)
            out += released
        return out

    def close(self) -> None:
        for timer in self.timers:
            timer.cancel()
        self.held.clear()

    def _act(self, toxic: Toxic, message: bytes) -> list[bytes]:
        action = toxic.attributes["action"]
        if action == "drop":
            return []
        if action == "duplicate":
            return [message, message]
        until = "any" if action == "reorder" else str(toxic.attributes["until"])
        entry = (message, until)
        self.held.append(entry)
        hold_s = int(toxic.attributes["hold_ms"]) / 1000
        self.timers.append(asyncio.get_running_loop().call_later(hold_s, self._release, entry))
        return []

    def _released_by(self, kind: str) -> list[bytes]:
        """The held messages a message of `kind` sends on (right after it)."""
        released = [entry for entry in self.held if entry[1] in ("any", kind)]
        for entry in released:
            self.held.remove(entry)
        return [message for message, _ in released]

    def _release(self, entry: tuple[bytes, str]) -> None:
        if entry in self.held:
            self.held.remove(entry)
            self.write(entry[0])


def _takes(toxic: Toxic, kind: str, rng: random.Random) -> bool:
    """Whether `toxic` acts on this message of `kind` (counting it as seen):
    in its moment, past its skip, short of its count, and drawn at its rate."""
    if toxic.attributes["kind"] not in ("any", kind):
        return False
    if toxic.attributes["after"] and not toxic.tally.opened:
        return False
    toxic.tally.seen += 1
    count = int(toxic.attributes["count"])
    if toxic.tally.seen <= int(toxic.attributes["skip"]) or (count and toxic.tally.acted >= count):
        return False
    return rng.random() * 1000 < int(toxic.attributes["per_mille"])


def _moment(toxic: Toxic, kind: str, passed: bool) -> None:
    """A message of `kind` has been through `toxic` (after it was asked
    whether to act, so that the message that opens a moment is not the one
    faulted): one of its `after` kinds opens its moment; one of its
    `before` kinds that passed (neither dropped nor held by it) closes it."""
    if kind in toxic.attributes["after"].split(","):
        toxic.tally.opened = True
    elif passed and kind in toxic.attributes["before"].split(","):
        toxic.tally.opened = False
