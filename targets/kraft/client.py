"""Clients of the node's client port (line-delimited JSON, see `server`).

`Client` is asyncio and pipelines: many requests may be in flight on one
connection, matched to answers by id. `call` is a one-shot blocking helper.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import socket

from history.errors import ConnectionLost


class Client:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.ids = itertools.count()
        self.waiting: dict[int, asyncio.Future] = {}
        self.reading = asyncio.create_task(self._read_answers())

    @classmethod
    async def connect(cls, host: str, port: int, timeout_s: float = 1.0) -> Client:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout_s)
        return cls(reader, writer)

    async def call(self, op: str, timeout_s: float = 2.0, **fields) -> dict:
        """Send one request and wait for its answer; `asyncio.TimeoutError` or
        `ConnectionError` mean the outcome is unknown."""
        request_id = next(self.ids)
        future = asyncio.get_running_loop().create_future()
        self.waiting[request_id] = future
        try:
            self.writer.write((json.dumps({"id": request_id, "op": op, **fields}) + "\n").encode())
            await self.writer.drain()
            return await asyncio.wait_for(future, timeout_s)
        finally:
            self.waiting.pop(request_id, None)

    async def _read_answers(self) -> None:
        error: Exception = ConnectionError("connection closed by the node")
        try:
            while line := await self.reader.readline():
                answer = json.loads(line)
                future = self.waiting.pop(answer.get("id"), None)
                if future is not None and not future.done():
                    future.set_result(answer)
        except (OSError, ValueError) as exc:
            error = ConnectionError(str(exc))
        for future in self.waiting.values():
            if not future.done():
                future.set_exception(error)

    async def close(self) -> None:
        self.reading.cancel()
        self.writer.close()
        try:
            await self.writer.wait_closed()
        except OSError:
            pass


def call_many(address: tuple[str, int], requests: list[dict], timeout_s: float = 2.0) -> list[dict | None]:
    """Several requests sent together on one fresh connection (they reach the
    node in one read), blocking; the answers in request order, None for one
    that did not come within `timeout_s`. Raises OSError only if the node
    could not be reached, so nothing was sent."""
    answers: dict[int, dict] = {}
    lines = "".join(json.dumps({**request, "id": i}) + "\n" for i, request in enumerate(requests))
    with socket.create_connection(address, timeout=timeout_s) as sock:
        try:
            sock.sendall(lines.encode())
            with sock.makefile("rb") as stream:
                while len(answers) < len(requests) and (line := stream.readline()):
                    answer = json.loads(line)
                    answers[answer.get("id")] = answer
        except (OSError, ValueError):
            pass  # once sent, a lost connection leaves the outcome unknown: no answer
    return [answers.get(i) for i in range(len(requests))]


def call(address: tuple[str, int], op: str, timeout_s: float = 2.0, **fields) -> dict:
    """One request on a fresh connection, blocking; raises OSError (incl. timeout)."""
    with socket.create_connection(address, timeout=timeout_s) as sock:
        sock.sendall((json.dumps({"id": 0, "op": op, **fields}) + "\n").encode())
        with sock.makefile("rb") as stream:
            line = stream.readline()
    if not line:
        raise ConnectionLost(f"{address[0]}:{address[1]} closed the connection")
    return json.loads(line)
