"""The front that names the node at the other end of a connection: the
connecting socket is found in /proc by both its addresses, then the process
holding it; an ephemeral port shared by two connections to different
destinations is told apart."""

from __future__ import annotations

import os
import socket

from harness.attributed_links import holder, socket_inode


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
