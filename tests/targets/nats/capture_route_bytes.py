"""Captures real NATS route traffic for the framing parser's fixtures
(tests/targets/nats/route_bytes/): three JetStream servers of the system's
nats-server on 127.0.0.1, each one's cluster port behind a recording relay
that the others dial as its route (a pair keeps one route, whichever
dialled), so each route connection is kept, each way in a file of its own
(`to-nN-cNN.up`: what the dialling server sent; `.down`: what nN sent
back), cut at 24 kB (tests/targets/recording_relay.py). Meanwhile a client makes
a stream of three replicas, publishes to it, reads it and asks its leader
to step down twice (votes on the wire).

    .venv/bin/python -m tests.targets.nats.capture_route_bytes OUT_DIR

It writes only under OUT_DIR and a fresh temporary folder, and stops every
process it started on every exit path."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import nats

from tests.targets.recording_relay import recording_relay

CLIENT, CLUSTER, RELAY = 24890, 24900, 24910


async def load() -> None:
    """A stream of three replicas, written, read, and its leader stepped down twice."""
    client = await nats.connect(f"nats://127.0.0.1:{CLIENT + 1}")
    try:
        js = client.jetstream()
        await js.add_stream(name="capture", subjects=["capture.>"], num_replicas=3)
        for i in range(60):
            await js.publish(f"capture.{i % 3}", str(i).encode())
            if i in (20, 40):
                await client.request("$JS.API.STREAM.LEADER.STEPDOWN.capture", b"", timeout=5)
                await asyncio.sleep(2)
            await asyncio.sleep(0.05)
        await js.get_last_msg("capture", "capture.0")
    finally:
        await client.close()


async def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="nats-capture-"))
    servers = [await recording_relay(out, RELAY + n, CLUSTER + n, f"to-n{n}-") for n in (1, 2, 3)]
    processes = []
    try:
        for n in (1, 2, 3):
            routes = ",".join(f"nats://127.0.0.1:{RELAY + m}" for m in (1, 2, 3) if m != n)
            command = [
                "nats-server",
                f"--server_name=n{n}",
                "--addr=127.0.0.1",
                f"--port={CLIENT + n}",
                "--jetstream",
                f"--store_dir={work / f'n{n}'}",
                "--cluster_name=capture",
                f"--cluster=nats://127.0.0.1:{CLUSTER + n}",
                f"--cluster_advertise=127.0.0.1:{RELAY + n}",
                f"--routes={routes}",
            ]
            log = open(work / f"n{n}.log", "wb")
            processes.append(subprocess.Popen(command, stdout=log, stderr=log))
        await asyncio.sleep(4)
        await load()
        await asyncio.sleep(1)
    finally:
        for process in processes:
            process.kill()
            process.wait()
        for server in servers:
            server.close()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1])))
