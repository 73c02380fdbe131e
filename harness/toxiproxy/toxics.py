"""Toxiproxy's toxics, applied to one direction of one proxied TCP connection.

Each toxic is plain data (Toxiproxy's JSON shape) plus what it does to the
bytes: `transform` runs on every chunk read from the stream's source and may
delay, split, hold back or stop it; `deadline_s` gives the toxics that act on a
timer (`timeout`, `reset_peer`) the moment they fire. Standard library only.

One toxic is splitbrain's own: `message` acts on whole messages of a proxy
that knows its traffic's framing (messages.py), not on bytes.
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass, field
from typing import Any

STREAMS = ("upstream", "downstream")

# type -> {attribute: default} (an attribute takes values of its default's type)
ATTRIBUTES: dict[str, dict[str, int | str]] = {
    "latency": {"latency": 0, "jitter": 0},
    "bandwidth": {"rate": 0},
    "slow_close": {"delay": 0},
    "timeout": {"timeout": 0},
    "reset_peer": {"timeout": 0},
    "slicer": {"average_size": 0, "size_variation": 0, "delay": 0},
    "limit_data": {"bytes": 0},
    # What to do (ACTIONS) to `count` messages of `kind` ("any": every kind)
    # after `skip` of them pass; a held one goes on after `hold_ms`, or
    # just after the next message of kind `until` (reorder: of any kind).
    # Toxics of one `group` (on several proxies) count their messages together, skipped and acted on.
    # Each message it could act on, it acts on at the rate `per_mille` (1000: every one).
    # A moment: with `after` (kinds, comma-separated), it acts only once a
    # message of one of them has passed on its group's links, and with
    # `before` no longer once one of those has passed after it (a vote or a
    # read index in flight: between it and its answer); another `after` opens it again.
    "message": {
        "action": "drop",
        "kind": "any",
        "count": 1,
        "skip": 0,
        "hold_ms": 1000,
        "until": "",
        "group": "",
        "per_mille": 1000,
        "after": "",
        "before": "",
    },
}
ACTIONS = ("drop", "hold", "duplicate", "reorder")


class InvalidToxic(ValueError):
    """A toxic the API must refuse with 400; the message says why."""


class CloseConnection(Exception):
    """Raised by a toxic to end the connection; `reset` sends RST instead of FIN."""

    def __init__(self, reset: bool = False) -> None:
        super().__init__("reset" if reset else "close")
        self.reset = reset


@dataclass
class Tally:
    seen: int = 0
    acted: int = 0
    opened: bool = False  # its moment has come (an `after` passed, and no `before` since)


@dataclass
class Toxic:
    name: str
    type: str
    stream: str = "downstream"
    toxicity: float = 1.0
    attributes: dict[str, Any] = field(default_factory=dict)
    # The messages a `message` toxic acted on, in order (its JSON's `applied`), and how many of its kind it saw.
    applied: list[dict] = field(default_factory=list)
    # How many messages of its kind it (with its group's, on other proxies) saw and acted on.
    tally: Tally = field(default_factory=lambda: Tally())

    @classmethod
    def from_json(cls, body: dict) -> Toxic:
        if not isinstance(body, dict):
            raise InvalidToxic("a toxic is a JSON object")
        kind = body.get("type")
        if kind not in ATTRIBUTES:
            raise InvalidToxic(f"invalid toxic type: {kind!r}")
        stream = body.get("stream") or "downstream"
        if stream not in STREAMS:
            raise InvalidToxic(f"stream must be upstream or downstream, not {stream!r}")
        toxicity = body.get("toxicity", 1.0)
        if not isinstance(toxicity, (int, float)) or not 0 <= toxicity <= 1:
            raise InvalidToxic(f"toxicity must be a number in [0, 1], not {toxicity!r}")
        name = str(body.get("name") or f"{kind}_{stream}")
        toxic = cls(name=name, type=kind, stream=stream, toxicity=float(toxicity))
        toxic.attributes = dict(ATTRIBUTES[kind])
        toxic.update_attributes(body.get("attributes") or {})
        return toxic

    def update_attributes(self, attributes: dict) -> None:
        for key, value in attributes.items():
            if key not in ATTRIBUTES[self.type]:
                raise InvalidToxic(f"{self.type} has no attribute {key!r}")
            if isinstance(ATTRIBUTES[self.type][key], str):
                if not isinstance(value, str):
                    raise InvalidToxic(f"{self.type}.{key} must be a string, not {value!r}")
                if key == "action" and value not in ACTIONS:
                    raise InvalidToxic(f"message.action must be one of {', '.join(ACTIONS)}, not {value!r}")
            elif not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise InvalidToxic(f"{self.type}.{key} must be a non-negative integer, not {value!r}")
            self.attributes[key] = value

    def to_json(self) -> dict:
        body = {
            "name": self.name,
            "type": self.type,
            "stream": self.stream,
            "toxicity": self.toxicity,
            "attributes": dict(self.attributes),
        }
        if self.type == "message":
            body["applied"] = list(self.applied)
        return body


class ToxicState:
    """What one toxic remembers about one connection direction."""

    def __init__(self, toxic: Toxic, now_s: float, rng: random.Random) -> None:
        self.toxic = toxic
        self.active = rng.random() < toxic.toxicity
        self.since_s = now_s
        self.bytes_sent = 0

    def deadline_s(self) -> float | None:
        """When a timer toxic fires (timeout 0 never fires: it only holds data)."""
        if not self.active or self.toxic.type not in ("timeout", "reset_peer"):
            return None
        timeout_ms = self.toxic.attributes["timeout"]
        if self.toxic.type == "timeout" and timeout_ms == 0:
            return None
        return self.since_s + timeout_ms / 1000

    def fire(self) -> None:
        raise CloseConnection(reset=self.toxic.type == "reset_peer")

    async def transform(self, chunks: list[bytes], rng: random.Random) -> list[bytes]:
        """The chunks to forward after this toxic, in order (after any delay)."""
        if not self.active or not chunks:
            return chunks
        attrs = self.toxic.attributes
        kind = self.toxic.type
        if kind == "latency":
            jitter = attrs["jitter"]
            delay_ms = attrs["latency"] + (rng.uniform(-jitter, jitter) if jitter else 0)
            await asyncio.sleep(max(0.0, delay_ms) / 1000)
        elif kind == "bandwidth" and attrs["rate"] > 0:
            size = sum(len(c) for c in chunks)
            await asyncio.sleep(size / (attrs["rate"] * 1000))
        elif kind == "timeout":
            return []
        elif kind == "slicer" and attrs["average_size"] > 0:
            return _slice(b"".join(chunks), attrs["average_size"], attrs["size_variation"], rng)
        elif kind == "limit_data" and attrs["bytes"] > 0:
            data = b"".join(chunks)
            room = attrs["bytes"] - self.bytes_sent
            if len(data) >= room:
                raise _LimitReached(data[: max(0, room)])
            self.bytes_sent += len(data)
        return chunks

    def slice_delay_s(self) -> float:
        if self.active and self.toxic.type == "slicer":
            return self.toxic.attributes["delay"] / 1_000_000
        return 0.0

    def close_delay_s(self) -> float:
        if self.active and self.toxic.type == "slow_close":
            return self.toxic.attributes["delay"] / 1000
        return 0.0


class _LimitReached(CloseConnection):
    """`limit_data` lets `last` through, then the connection closes."""

    def __init__(self, last: bytes) -> None:
        super().__init__(reset=False)
        self.last = last


def _slice(data: bytes, average: int, variation: int, rng: random.Random) -> list[bytes]:
    out = []
    while data:
        size = max(1, average + (rng.randint(-variation, variation) if variation else 0))
        out.append(data[:size])
        data = data[size:]
    return out
