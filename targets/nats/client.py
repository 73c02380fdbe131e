"""One nats-py connection to one server, turning workload operations into
completions.

- `append`: the stream `LOG` (subject `log`). The client reads the stream's
  last sequence, then publishes expecting it (`Nats-Expected-Last-Sequence`):
  the record lands right after what was read, or not at all (a rejected
  expectation, err_code 10071, is definite). The offset is where the ack
  says it landed (sequence - 1, so offsets start at 0 as in a log), and an
  ack naming another place than the one expected is recorded as such.
- `register`: the bucket `reg` (stream `KV_reg`, history 1). A read is a
  get (the stream leader answers, or with `serializable_reads` any replica:
  a direct get); a write a put; a cas reads the key's entry and, when it
  holds the expected value, updates it expecting that entry's revision.

The stream and the bucket are made once, before load (`make_workload`);
a client never makes them again, so one that vanishes under faults (a
stream whose files did not survive) shows as operations that find nothing.

Errors: a timeout or a lost connection raises (the harness records the
operation as indeterminate); a rejected expectation or a read that
found another value is a definite failure; "no responders" (503: no server
had the stream's API subscribed, so nothing took the request) is a definite
failure the checkers can contradict (a failed append found in a final log
is named by committed-data-loss); any other API error is indeterminate.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import nats
from nats.errors import NoRespondersError
from nats.js import JetStreamContext
from nats.js.api import KeyValueConfig, StorageType, StreamConfig
from nats.js.errors import APIError, KeyNotFoundError, KeyWrongLastSequenceError, NoStreamResponseError, NotFoundError

from history.errors import ClusterError, ConnectionLost, Defect
from targets.interface import TargetClient

from .streams import BUCKET, STREAM, SUBJECT

WRONG_LAST_SEQUENCE = 10071


class NatsClient(TargetClient):
    def __init__(self, connection, timeout_s: float) -> None:
        self.connection = connection
        self.js = connection.jetstream(timeout=timeout_s)
        self.kv: Any = None  # the register's bucket (nats-py's KeyValue), bound on first use

    @classmethod
    async def connect(cls, address: tuple[str, int], timeout_s: float, settings: dict) -> NatsClient:
        connection = await nats.connect(
            f"nats://{address[0]}:{address[1]}",
            connect_timeout=timeout_s,
            allow_reconnect=False,
            max_reconnect_attempts=0,
            error_cb=quiet,
        )
        return cls(connection, timeout_s)

    async def invoke(self, f: str, key: Any, value: Any, timeout_s: float) -> dict:
        if self.connection.is_closed:  # the harness makes a new client for the next operation
            raise ConnectionLost("the connection closed")
        try:
            await self._ready(f, timeout_s)
        except (nats.errors.Error, OSError) as error:  # nothing of the operation was sent
            return {"type": "fail", "value": value, "error": f"not ready: {_described(error)}"}
        try:
            if f == "append":
                return await self._append(value, timeout_s)
            if f == "read":
                entry = await self._entry(key, timeout_s)
                return {"type": "ok", "value": None if entry is None else json.loads(entry.value)}
            if f == "write":
                await self.kv.put(key, json.dumps(value).encode())
                return {"type": "ok", "value": value}
            if f == "cas":
                return await self._cas(key, value, timeout_s)
        except KeyWrongLastSequenceError as error:
            return {"type": "fail", "value": value, "error": f"wrong last sequence: {error}"}
        except (NoRespondersError, NoStreamResponseError) as error:
            return {"type": "fail", "value": value, "error": f"no responders: {_described(error)}"}
        except APIError as error:  # a read that errs changed nothing
            definite = f == "read" or error.err_code == WRONG_LAST_SEQUENCE
            return {"type": "fail" if definite else "info", "value": value, "error": _described(error)}
        except nats.errors.Error as error:  # the connection closed or broke: the harness records it indeterminate
            raise ConnectionLost(_described(error)) from None
        raise Defect(f"nats: no operation {f!r}")

    async def _ready(self, f: str, timeout_s: float) -> None:
        """The register's bucket, bound on first use (it was made before load:
        `make_workload`; a bucket that vanished is not made again)."""
        if f != "append" and self.kv is None:
            self.kv = await self.js.key_value(BUCKET)

    async def _append(self, value: object, timeout_s: float) -> dict:
        try:
            last = (await self.js.stream_info(STREAM)).state.last_seq
        except (NoRespondersError, NoStreamResponseError, APIError, TimeoutError) as error:  # nothing was written
            return {"type": "fail", "value": value, "error": f"read: {_described(error)}"}
        ack = await self.js.publish(
            SUBJECT, json.dumps(value).encode(), timeout=timeout_s, headers={"Nats-Expected-Last-Sequence": str(last)}
        )
        done = {"type": "ok", "value": value, "offset": ack.seq - 1}
        if ack.seq != last + 1:
            done["error"] = f"acknowledged at sequence {ack.seq}, expected {last + 1}"
        return done

    async def _entry(self, key: str, timeout_s: float):
        try:
            return await self.kv.get(key)
        except (KeyNotFoundError, NotFoundError):
            return None

    async def _cas(self, key: str, value: list, timeout_s: float) -> dict:
        expected, new = value
        entry = await self._entry(key, timeout_s)
        if entry is None or json.loads(entry.value) != expected:
            return {"type": "fail", "value": value, "error": "cas-mismatch"}
        await self.kv.update(key, json.dumps(new).encode(), last=entry.revision)
        return {"type": "ok", "value": value}

    async def close(self) -> None:
        """Closed, or already broken (nats-py's errors for a lost connection: a ConnectionLost)."""
        try:
            await self.connection.close()
        except nats.errors.Error as error:
            raise ConnectionLost(_described(error)) from None


def _described(error: Exception) -> str:
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__


async def quiet(error: Exception) -> None:
    """nats-py reports a broken connection here as well as to the caller; the caller's is recorded."""


async def make_workload(workload: str, address: tuple[str, int], settings: dict, timeout_s: float) -> None:
    """The append workload's stream, or the register's bucket, made once
    through the server at `address` (retried until `timeout_s`: a new
    cluster's metadata leader may not take requests at once). Direct gets
    are allowed on the bucket only with `serializable_reads`, whose reads
    they are (each server's copy of the stream is read from its files:
    blocks.py)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while True:
        connection = None
        try:
            connection = await nats.connect(
                f"nats://{address[0]}:{address[1]}", connect_timeout=2, allow_reconnect=False, error_cb=quiet
            )
            js = connection.jetstream(timeout=2)
            if workload == "append":
                await js.add_stream(
                    StreamConfig(
                        name=STREAM,
                        subjects=[SUBJECT],
                        num_replicas=settings["replicas"],
                        storage=StorageType.FILE,
                    )
                )
            else:
                await js.create_key_value(
                    KeyValueConfig(
                        bucket=BUCKET, history=1, replicas=settings["replicas"], direct=settings["serializable_reads"]
                    )
                )
            return
        except (nats.errors.Error, OSError) as error:
            if loop.time() > deadline:
                raise ClusterError(
                    f"nats: the {workload} workload's stream was not made: {_described(error)}"
                ) from None
            await asyncio.sleep(0.5)
        finally:
            if connection is not None:
                await connection.close()


def _stream_of(workload: str) -> str:
    """The workload's stream: the append's, or the register bucket's."""
    return STREAM if workload == "append" else f"KV_{BUCKET}"


@asynccontextmanager
async def _jetstream(address: tuple[str, int], timeout_s: float) -> AsyncIterator[JetStreamContext]:
    """JetStream through one connection to the server at `address`, closed on the way out."""
    connection = await nats.connect(
        f"nats://{address[0]}:{address[1]}", connect_timeout=timeout_s, allow_reconnect=False, error_cb=quiet
    )
    try:
        yield connection.jetstream(timeout=timeout_s)
    finally:
        await connection.close()


async def change_replicas(address: tuple[str, int], workload: str, replicas: int, timeout_s: float) -> dict | None:
    """The workload's stream updated to `replicas` replicas through the
    server at `address` (`nats stream edit --replicas`): the servers that
    hold a replica in the answer (the leader first), its `error` when the
    server refused, None when no answer came."""
    try:
        async with _jetstream(address, timeout_s) as js:
            config = (await js.stream_info(_stream_of(workload))).config
            config.num_replicas = replicas
            cluster = (await js.update_stream(config)).cluster
    except APIError as error:
        return {"error": _described(error)}
    except (TimeoutError, nats.errors.Error, OSError):
        return None
    if cluster is None:
        return {"peers": []}
    others = [peer.name for peer in cluster.replicas or [] if peer.name]
    return {"peers": ([cluster.leader] if cluster.leader else []) + others}


async def current_replicas(address: tuple[str, int], workload: str, timeout_s: float) -> list[str] | None:
    """The servers whose replica of the workload's stream is current, as
    the server at `address` reports it (`nats stream info`): the leader
    first, then each replica the leader reports online and caught up; none
    while the stream has no leader; None when no answer came."""
    try:
        async with _jetstream(address, timeout_s) as js:
            cluster = (await js.stream_info(_stream_of(workload))).cluster
    except (TimeoutError, nats.errors.Error, OSError):
        return None
    if cluster is None or not cluster.leader:
        return []
    return [cluster.leader] + [
        peer.name for peer in cluster.replicas or [] if peer.name and peer.current and not peer.offline
    ]
