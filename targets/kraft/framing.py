"""How the reference quorum's peer traffic splits into messages: one JSON
object per line (server.py's `_send`), its `type` the message's class
(messages.py). The link proxy imports this by name to drop, hold, duplicate
or reorder single messages (`Capabilities.framing`), so it imports nothing
but the standard library.
"""

from __future__ import annotations

import json
from typing import Any

# Each message class and the kind it is (history/messages.py's vocabulary).
KINDS = {
    "VoteRequest": "vote-request",
    "VoteResponse": "vote-answer",
    "FetchRequest": "fetch",
    "FetchResponse": "fetch-answer",
    "BeginQuorumEpoch": "leader-notice",
    "EndQuorumEpoch": "leader-notice",
    "EndQuorumEpochResponse": "leader-notice",
    "VoterChangeRequest": "membership",
    "VoterChangeResponse": "membership",
}
# What a message's row names of it, where the message has them.
FIELDS = ("epoch", "offset", "fetch_offset", "hwm", "pre_vote", "granted")


def split(buffer: bytes) -> tuple[list[tuple[bytes, str, dict[str, Any]]], bytes]:
    """The whole messages at the front of `buffer` (each its bytes, its
    kind and what it says of its epoch and offsets), and what is left of a
    message not yet whole. A line that is no message passes as `other`."""
    messages: list[tuple[bytes, str, dict[str, Any]]] = []
    start = 0
    while (end := buffer.find(b"\n", start)) != -1:
        line = buffer[start : end + 1]
        start = end + 1
        try:
            body = json.loads(line)
            kind = KINDS.get(body.get("type"), "other")
        except (ValueError, AttributeError):
            messages.append((line, "other", {}))
            continue
        fields = {name: body[name] for name in FIELDS if name in body}
        if body.get("type") == "FetchResponse":
            fields["entries"] = len(body.get("entries") or ())
        messages.append((line, kind, fields))
    return messages, buffer[start:]
