"""How NATS's route traffic splits into JetStream's Raft messages, for
message faults on its links. Standard library only: a link proxy imports it.

A route carries NATS's text protocol both ways: lines (`INFO`, `CONNECT`,
`PING`, `PONG`, `RS+`, `RS-`, ...) and messages, each a line naming its
account, subject, reply and size, then that many bytes and CRLF:
`RMSG $SYS $NRG.AE.<group> $NRG.R.<inbox> 81` (`HMSG` with headers: the
header size before the total). JetStream's Raft groups talk on `$NRG.`
subjects (nats-server's raft.go), little-endian binary payloads:
- `$NRG.V.<group>`: a vote request (term, last term, last index, candidate);
- `$NRG.AE.<group>`, and `$NRG.CR.<inbox>` for a follower catching up: an
  append (leader, term, commit, previous term, previous index, entry
  count, entries); one with no entries is a heartbeat;
- `$NRG.R.<inbox>`: an answer, a vote's (17 bytes: term, peer, granted) or
  an append's (25 bytes: term, index, peer, success);
- `$NRG.RP.<group>`: a peer's removal; `$NRG.P.<group>`: a forwarded proposal.
Each Raft message is a unit with its kind (history/messages.py); every
other line and message (clients' traffic, the system account's events,
interest) is a unit of kind "", which a proxy passes as it is. Both ways
of a route are framed alike, by `split`; bytes it cannot frame raise
`Unframed` (a ValueError), and the proxy turns the connection to passing
bytes through, saying why. A unit is `(bytes, kind, fields)`.
"""

from __future__ import annotations

from typing import Any

Unit = tuple[bytes, str, dict[str, Any]]
# Each type of Raft message (nats-server's names) and the kind it is.
KINDS = {
    "voteRequest": "vote-request",
    "voteResponse": "vote-answer",
    "appendEntry": "append",
    "heartbeat": "heartbeat",  # (an appendEntry with no entries)
    "appendEntryResponse": "append-answer",
    "removePeer": "membership",
    "proposal": "other",
}
MESSAGES = (b"RMSG", b"HMSG", b"MSG", b"LMSG")
VOTE_REQUEST, VOTE_ANSWER, APPEND_ANSWER, APPEND_BASE = 32, 17, 25, 42
# A line longer than this is no NATS protocol.
MAX_LINE = 64 * 1024


class Unframed(ValueError):
    """Bytes that are not NATS's route protocol (a proxy then passes the connection's bytes as they are)."""


def raft_message(subject: str, payload: bytes) -> tuple[str, dict[str, Any]]:
    """The kind of a message on `subject` and what a history row names of
    it (its type, its term as `epoch`, an index as `offset`, a commit as
    `hwm`, how many entries, whether granted); "" for a subject no Raft group uses."""
    if not subject.startswith("$NRG."):
        return "", {}
    name, fields = _raft_type(subject, payload, lambda at: int.from_bytes(payload[at : at + 8], "little"))
    return KINDS.get(name, "other"), {"type": name, **fields}


def _raft_type(subject: str, payload: bytes, number: Any) -> tuple[str, dict[str, Any]]:
    if subject.startswith("$NRG.V.") and len(payload) == VOTE_REQUEST:
        return "voteRequest", {"epoch": number(0), "offset": number(16)}
    if subject.startswith(("$NRG.AE.", "$NRG.CR.")) and len(payload) >= APPEND_BASE:
        entries = int.from_bytes(payload[40:42], "little")
        fields = {"epoch": number(8), "hwm": number(16), "offset": number(32), "entries": entries}
        return ("appendEntry" if entries else "heartbeat"), fields
    if subject.startswith("$NRG.R.") and len(payload) == VOTE_ANSWER:
        return "voteResponse", {"epoch": number(0), "granted": bool(payload[16] & 1)}
    if subject.startswith("$NRG.R.") and len(payload) == APPEND_ANSWER:
        return "appendEntryResponse", {"epoch": number(0), "offset": number(8), "granted": bool(payload[24])}
    if subject.startswith("$NRG.RP."):
        return "removePeer", {}
    return ("proposal" if subject.startswith("$NRG.P.") else "unknown"), {}


def split(buffer: bytes) -> tuple[list[Unit], bytes]:
    """The whole lines and messages at the front of `buffer`, and what is
    left of one not yet whole; Unframed for bytes no route sends."""
    units: list[Unit] = []
    at = 0
    while (end := buffer.find(b"\r\n", at)) != -1:
        line = buffer[at:end]
        words = line.split()
        if not words or words[0].upper() not in MESSAGES:
            units.append((buffer[at : end + 2], "", {}))
            at = end + 2
            continue
        try:
            size = int(words[-1])
            headers = int(words[-2]) if words[0].upper() == b"HMSG" else 0
        except (ValueError, IndexError):
            raise Unframed(f"a message's size in {line[:60]!r}") from None
        whole = end + 2 + size + 2
        if len(buffer) < whole:
            break
        if buffer[whole - 2 : whole] != b"\r\n":
            raise Unframed(f"a message not ended by CRLF after {line[:60]!r}")
        subject = next((w.decode("latin-1") for w in words[1:3] if w.startswith(b"$NRG.")), "")
        kind, fields = raft_message(subject, buffer[end + 2 + headers : whole - 2])
        units.append((buffer[at:whole], kind, fields))
        at = whole
    if len(buffer) - at > MAX_LINE and buffer.find(b"\r\n", at) == -1:
        raise Unframed("no line ends")
    return units, buffer[at:]
