"""A stream's messages as one server wrote them: its message blocks
(`<stream>/msgs/<n>.blk`) read from its data directory.

Why files and not the network: a direct get is taken by a queue group that
every current replica joins, and nats-server hands a client's request to a
member chosen at random, its own or another server's (2.9.10's
`processMsgResults`), so an answer through one server need not be that
server's copy; replicas that disagree then read as one. The files are the
server's own, as they hold only what it wrote (2.9.10 writes a replicated
file stream's records in place as they are stored).

A record (2.9.10's `filestore.go`): total length (4 bytes, little-endian,
the high bit set where headers follow), sequence (8; the high bit marks an
erased message, skipped here), timestamp (8), subject length (2), the
subject, then, with headers, their length (4) and the headers, then the
message and an 8-byte checksum. A record that runs past its file's end is
one the server was writing: the read stops there, and the caller compares
what was read with what the server reports.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from pathlib import Path

HEADERS = 1 << 31
ERASED = 1 << 63
FIXED = 22  # length, sequence, timestamp, subject length
CHECKSUM = 8


def stream_messages(stream_dir: Path) -> dict[int, bytes]:
    """Sequence -> message body, over every block of the stream in order."""
    messages: dict[int, bytes] = {}
    blocks = sorted((path for path in (stream_dir / "msgs").glob("*.blk")), key=lambda path: int(path.stem))
    for block in blocks:
        data = block.read_bytes()
        messages.update((sequence, data[body]) for sequence, body in records(data))
    return messages


def records(data: bytes) -> Iterator[tuple[int, slice]]:
    """Each whole record of one block that is not erased: its sequence and
    where its message body lies."""
    at = 0
    while at + FIXED <= len(data):
        length, sequence, _, subject = struct.unpack_from("<IQqH", data, at)
        headers, length = length & HEADERS, length & ~HEADERS
        if length < FIXED + subject + CHECKSUM or at + length > len(data):
            return
        body = at + FIXED + subject
        if headers:
            (header_length,) = struct.unpack_from("<I", data, body)
            body += 4 + header_length
        if sequence and not sequence & ERASED:
            yield sequence, slice(body, at + length - CHECKSUM)
        at += length
