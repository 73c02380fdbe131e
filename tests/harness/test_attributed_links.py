"""The front that names the node at the other end of a connection: the
connecting socket is found in /proc by both its addresses, then the process
holding it; an ephemeral port shared by two connections to different
destinations is told apart."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import threading
import time
from types import SimpleNamespace

from harness.attributed_links import AttributedLinks, holder, live_pids, socket_inode


def listener() -> socket.socket:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    return server


def test_a_connection_is_traced_to_its_socket_and_its_process_even_on_a_shared_port():
    servers = [listener(), listener()]
    clients = []
    for server in servers:
        client = socket.socket()
        client.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        client.bind(("127.0.0.1", clients[0].getsockname()[1] if clients else 0))
        client.connect(server.getsockname())
        clients.append(client)
    try:
        assert clients[0].getsockname() == clients[1].getsockname()  # one ephemeral port, two destinations
        for client, server in zip(clients, servers):
            inode = socket_inode(client.getsockname(), server.getsockname())
            assert inode == os.fstat(client.fileno()).st_ino
            assert holder(inode, {os.getpid(): "me"}) == "me"
        assert holder(os.fstat(clients[0].fileno()).st_ino, {1: "init"}) is None
        assert socket_inode(("127.0.0.1", 1), servers[0].getsockname()) is None
    finally:
        for s in clients + servers:
            s.close()


def test_a_connection_closed_by_the_node_is_closed_through_the_front():
    """The front forwards both ways and passes the end of a connection on:
    a peer that hangs up is seen to hang up (a half-open connection would
    leave the dialling member waiting on a stream no one writes)."""
    node = listener()
    cluster = SimpleNamespace(ids=["n1"], processes={}, raft={"n1": node.getsockname()})
    links = AttributedLinks(cluster)
    errors = []
    links.loop.set_exception_handler(lambda loop, context: errors.append(context))
    client = socket.create_connection(links.fronts["n1"], timeout=5)
    try:
        accepted, _ = node.accept()
        client.sendall(b"ping")
        assert accepted.recv(4) == b"ping"
        accepted.sendall(b"pong")
        accepted.close()
        assert client.recv(4) == b"pong"
        assert client.recv(4) == b""  # the node's close reached the client
        assert errors == []  # ended by the front, not by asyncio after a failed handler
    finally:
        client.close()
        node.close()
        links.remove()
    assert not links.thread.is_alive()


def test_the_live_processes_are_read_while_the_nemesis_changes_them():
    """A node started (or replaced) on the nemesis's thread while a front asks
    who holds a socket: the ask sees the nodes as they were, and never fails
    with 'dictionary changed size during iteration' (a traceback on the console)."""
    processes: dict = {}

    class Started:
        """A node whose `poll` lets the nemesis's thread start another node meanwhile."""

        def __init__(self, pid: int) -> None:
            self.pid = pid

        def poll(self):
            processes[f"n{len(processes) + 1}"] = Started(len(processes) + 100)
            return None

    processes.update(n1=Started(1), n2=Started(2))
    assert live_pids(processes) == {1: "n1", 2: "n2"}


def test_a_connection_accepted_as_the_fronts_close_leaves_no_task_pending():
    """A member that dials as the run ends (etcd redials every 100 ms): its
    connection, still being forwarded when the fronts close, must end with
    them. It was left forwarding, its task pending when the loop stopped,
    and every etcd run ended with "Task was destroyed but it is pending!"."""
    node = socket.socket()
    node.bind(("127.0.0.1", 0))
    node.listen(0)
    filler = socket.socket()  # the node's backlog full: the front's connect waits for SYN's retry (1 s)
    filler.setblocking(False)
    with contextlib.suppress(BlockingIOError):
        filler.connect(node.getsockname())
    cluster = SimpleNamespace(ids=["n1"], processes={}, raft={"n1": node.getsockname()})
    links = AttributedLinks(cluster)
    errors = []
    links.loop.set_exception_handler(lambda loop, context: errors.append(context))
    client = socket.create_connection(links.fronts["n1"], timeout=5)
    held = []

    def node_answers() -> None:  # the node takes its connections once the fronts are closing
        time.sleep(0.3)
        node.settimeout(3)
        with contextlib.suppress(OSError):
            while True:
                held.append(node.accept()[0])

    answering = threading.Thread(target=node_answers, daemon=True)
    answering.start()
    try:
        time.sleep(0.2)
        links.remove()
        assert not asyncio.all_tasks(links.loop)
        assert links.loop.is_closed()
        assert errors == []
    finally:
        answering.join(5)
        for s in [client, filler, node, *held]:
            s.close()
