"""A relay that records what passes, for capturing a real target's peer
traffic as the framing parsers' fixtures (tests/targets/*/capture_*.py):
each connection it accepts is forwarded to an upstream port, and each way
kept in a file of its own (`PREFIXcNN.up`: what the dialler sent;
`.down`: what came back), cut at CAP bytes."""

from __future__ import annotations

import asyncio
from pathlib import Path

CAP = 24_000


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, file: Path) -> None:
    kept = bytearray()
    try:
        while data := await reader.read(65536):
            if len(kept) < CAP:
                kept += data[: CAP - len(kept)]
                file.write_bytes(bytes(kept))
            writer.write(data)
            await writer.drain()
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        writer.close()


async def recording_relay(out: Path, port: int, upstream: int, prefix: str = "") -> asyncio.AbstractServer:
    """A listener on 127.0.0.1:`port` forwarding to `upstream`, recording into `out`."""
    count = 0

    async def accepted(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal count
        count += 1
        name = f"{prefix}c{count:02d}"
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", upstream)
            await asyncio.gather(
                _pipe(reader, up_writer, out / f"{name}.up"), _pipe(up_reader, writer, out / f"{name}.down")
            )
        except (OSError, asyncio.CancelledError):
            writer.close()

    return await asyncio.start_server(accepted, "127.0.0.1", port)
