"""Captures real etcd peer traffic for the framing parser's fixtures
(tests/targets/etcd/peer_bytes/): three members of the system's etcd on
127.0.0.1, n2's advertised peer URL a recording relay in front of its
listener, so every connection n1 and n3 open to n2 is kept, each way in a
file of its own (`cNN.up`: what the dialling member sent; `cNN.down`: what
n2 answered), cut at 24 kB (tests/targets/recording_relay.py). Meanwhile a client writes, reads
linearizably at n2 (a follower's read index, when n2 does not lead) and
moves the leadership to n2 and away (votes on the wire).

    .venv/bin/python -m tests.targets.etcd.capture_peer_bytes OUT_DIR

It writes only under OUT_DIR and a fresh temporary folder, and stops every
process it started on every exit path."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path

from tests.targets.recording_relay import recording_relay

CLIENT, PEER, RELAY = 24790, 24800, 24812


def call(node: int, path: str, body: dict) -> dict:
    request = urllib.request.Request(
        f"http://127.0.0.1:{CLIENT + node}{path}", json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=5) as answer:
        return json.loads(answer.read())


def move_leader(to: int) -> None:
    """Asks the leader to hand its leadership to member n`to`."""
    statuses = {n: call(n, "/v3/maintenance/status", {}) for n in (1, 2, 3)}
    leader = next(n for n, status in statuses.items() if status["header"]["member_id"] == status.get("leader"))
    target = statuses[to]["header"]["member_id"]
    if leader != to:
        call(leader, "/v3/maintenance/transfer-leadership", {"targetID": target})


async def load(seconds: float) -> None:
    """Puts at n1, linearizable reads at n2, and the leadership moved to n2 and back."""
    loop = asyncio.get_running_loop()
    for i in range(int(seconds * 10)):
        key = f"k{i % 3}".encode().hex()
        for node, path, body in (
            (1, "/v3/kv/put", {"key": key, "value": str(i).encode().hex()}),
            (2, "/v3/kv/range", {"key": key}),
        ):
            try:
                await loop.run_in_executor(None, call, node, path, body)
            except OSError:
                pass
        if i in (20, 40):
            await loop.run_in_executor(None, move_leader, 2 if i == 20 else 1)
        await asyncio.sleep(0.1)


async def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="etcd-capture-"))
    server = await recording_relay(out, RELAY, PEER + 2)
    cluster = ",".join(f"n{n}=http://127.0.0.1:{RELAY if n == 2 else PEER + n}" for n in (1, 2, 3))
    processes = []
    try:
        for n in (1, 2, 3):
            (work / f"n{n}").mkdir(mode=0o700)
            command = [
                "etcd",
                f"--name=n{n}",
                f"--data-dir={work / f'n{n}'}",
                f"--listen-client-urls=http://127.0.0.1:{CLIENT + n}",
                f"--advertise-client-urls=http://127.0.0.1:{CLIENT + n}",
                f"--listen-peer-urls=http://127.0.0.1:{PEER + n}",
                f"--initial-advertise-peer-urls=http://127.0.0.1:{RELAY if n == 2 else PEER + n}",
                f"--initial-cluster={cluster}",
                "--initial-cluster-state=new",
                "--initial-cluster-token=capture",
                "--heartbeat-interval=100",
                "--election-timeout=1000",
                "--pre-vote",
                "--logger=zap",
            ]
            log = open(work / f"n{n}.log", "wb")
            processes.append(subprocess.Popen(command, stdout=log, stderr=log))
        await asyncio.sleep(3)
        await load(8)
    finally:
        for process in processes:
            process.kill()
            process.wait()
        server.close()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1])))
