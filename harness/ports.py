"""Free TCP ports on 127.0.0.1 for the processes a run starts.

Ports are handed out from below the kernel's ephemeral range, walking from a
random start: a port the kernel gives to some `bind(0)` or outgoing
connection can then never be one we chose for a node or proxy that has not
started yet (binding port 0 to find a port had exactly that race).

Another process's walk can reach a port chosen here before the process meant
for it listens. So a port is chosen by binding it alone (no other socket on
it, SO_REUSEADDR or not), and the socket is kept, with SO_REUSEADDR set only
then, for `RESERVED_FOR` seconds: the process meant for it binds beside it,
and every other walk finds it taken. `hold` keeps it bound as long as a
cluster lasts. (Choosing by a test bind and letting go left a moment in which
two processes' walks chose one port: a CI run's kraft node, 'address already
in use', 2026-12-05.)
"""

from __future__ import annotations

import itertools
import os
import random
import socket
import time

from history.errors import ClusterError

LOW, HIGH = 10_000, 32_000
RESERVED_FOR = 60.0
_next = itertools.count(random.randrange(LOW, HIGH))
_reserved: dict[int, tuple[socket.socket, float]] = {}


def _walk_anew() -> None:
    """A forked process walks from a start of its own: runs forked from one
    process (a Spark campaign's) would otherwise all try the same ports."""
    global _next
    _next = itertools.count(random.randrange(LOW, HIGH))
    for sock, _ in _reserved.values():
        sock.close()  # the parent's to keep, not this child's
    _reserved.clear()


os.register_at_fork(after_in_child=_walk_anew)


def free_port() -> int:
    """A port no other socket is bound to, reserved here for `RESERVED_FOR`
    seconds (or, once `hold` takes it, as long as a cluster lasts)."""
    _let_go_of_old_reservations()
    for _ in range(HIGH - LOW):
        port = LOW + (next(_next) - LOW) % (HIGH - LOW)
        sock = _bound_alone(port)
        if sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            _reserved[port] = (sock, time.monotonic() + RESERVED_FOR)
            return port
    raise ClusterError(f"no free TCP port in {LOW}-{HIGH} on 127.0.0.1")


def _let_go_of_old_reservations() -> None:
    now = time.monotonic()
    for port in [port for port, (_, until) in _reserved.items() if until < now]:
        _reserved.pop(port)[0].close()


def _bound_alone(port: int, beside: bool = False) -> socket.socket | None:
    """A socket bound to `port` (None: taken); `beside`: with SO_REUSEADDR
    first, so it may share the port with others that ask for it too."""
    sock = socket.socket()
    if beside:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1", port))
    except OSError:
        sock.close()
        return None
    return sock


def is_free(port: int) -> bool:
    """Whether `port` can be bound on 127.0.0.1 now (no SO_REUSEADDR: a
    listener, a reservation or a `hold` on it says no)."""
    sock = _bound_alone(port)
    if sock is None:
        return False
    sock.close()
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
    connection to a node that is down is still refused. A port `free_port`
    reserved here is taken over from its reservation."""
    if port in _reserved:
        return _reserved.pop(port)[0]
    return _bound_alone(port, beside=True)
