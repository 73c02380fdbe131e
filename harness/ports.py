"""Free TCP ports on 127.0.0.1 for the processes a run starts.

Ports are handed out from below the kernel's ephemeral range, walking from a
random start: a port the kernel gives to some `bind(0)` or outgoing
connection can then never be one we chose for a node or proxy that has not
started yet (binding port 0 to find a port had exactly that race). Another
process's walk can still reach a port chosen here before its node listens
on it (the node not yet started, or down, or starting): `hold` keeps it
bound as long as the cluster lasts.
"""

from __future__ import annotations

import itertools
import os
import random
import socket

from history.errors import ClusterError

LOW, HIGH = 10_000, 32_000
_next = itertools.count(random.randrange(LOW, HIGH))


def _walk_anew() -> None:
    """A forked process walks from a start of its own: runs forked from one
    process (a Spark campaign's) would otherwise all try the same ports."""
    global _next
    _next = itertools.count(random.randrange(LOW, HIGH))


os.register_at_fork(after_in_child=_walk_anew)


def free_port() -> int:
    for _ in range(HIGH - LOW):
        port = LOW + (next(_next) - LOW) % (HIGH - LOW)
        if is_free(port):
            return port
    raise ClusterError(f"no free TCP port in {LOW}-{HIGH} on 127.0.0.1")


def is_free(port: int) -> bool:
    """Whether `port` can be bound on 127.0.0.1 now (no SO_REUSEADDR: a
    listener or a `hold` on it says no)."""
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def hold(port: int) -> socket.socket | None:
    """A socket bound to `port`, not listening, so that no other process's
    `free_port` takes it, from its choice until the cluster is closed; None
    where something else holds it already. The process meant for it listens
    beside it: its listener binds with SO_REUSEADDR, as this does (asyncio's
    and Go's do), and Linux lets sockets that all ask for it share a port
    while at most one listens. So there is no moment between letting go and
    listening for another process's walk to take the port in (a CI run
    failed so: a node started again, 'address already in use'), and a
    connection to a node that is down is still refused."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1", port))
    except OSError:
        sock.close()
        return None
    return sock
