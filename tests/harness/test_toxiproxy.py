"""splitbrain's Toxiproxy-compatible server, driven through toxiproxy-python
as the harness drives it, with each toxic measured on a real TCP stream."""

from __future__ import annotations

import socket
import socketserver
import threading
import time

import pytest
from toxiproxy.exceptions import InvalidToxic, NotFound, ProxyExists

from harness.links import OwnToxiproxy, ToxiproxyServer


class _Echo(socketserver.BaseRequestHandler):
    def handle(self):
        try:
            while data := self.request.recv(65536):
                if data == b"bye":
                    return
                self.request.sendall(data)
        except ConnectionResetError:
            pass


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


@pytest.fixture(scope="module")
def echo():
    server = _Server(("127.0.0.1", 0), _Echo)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with OwnToxiproxy() as own:
        yield ToxiproxyServer(own.url)


@pytest.fixture
def proxy(server, echo):
    client = server.use()
    client.reset()
    created = client.create(upstream=echo, name="echo")
    yield created
    client.destroy_all()


def connect(proxy) -> socket.socket:
    host, port = proxy.listen.rsplit(":", 1)
    return socket.create_connection((host, int(port)), timeout=3)


def round_trip(sock: socket.socket, payload: bytes = b"ping") -> float:
    start = time.perf_counter()
    sock.sendall(payload)
    got = b""
    while len(got) < len(payload):
        chunk = sock.recv(65536)
        assert chunk, "connection closed"
        got += chunk
    assert got == payload
    return time.perf_counter() - start


def test_api_shapes_and_status_codes(server, proxy, echo):
    client = server.use()
    assert client.version() == b"2.9.0"
    assert set(client.proxies()) == {"echo"}
    assert client.get_proxy("echo").upstream == echo
    assert not proxy.listen.endswith(":0"), "a requested port 0 is reported as the bound port"
    with pytest.raises(ProxyExists):
        client.create(upstream=echo, name="echo")
    proxy.add_toxic(type="latency", attributes={"latency": 10})
    assert proxy.toxics()["latency_downstream"].attributes == {"latency": 10, "jitter": 0}
    with pytest.raises(ProxyExists):
        proxy.add_toxic(type="latency", attributes={"latency": 10})
    with pytest.raises(InvalidToxic):
        proxy.add_toxic(type="no-such-toxic", name="bad")
    with pytest.raises(InvalidToxic):
        proxy.add_toxic(type="latency", name="bad", attributes={"latency": -1})
    assert server.update_toxic("echo", "latency_downstream", attributes={"jitter": 5})["attributes"] == {
        "latency": 10,
        "jitter": 5,
    }
    with pytest.raises(NotFound):
        server.update_toxic("echo", "nope", attributes={})
    proxy.destroy_toxic("latency_downstream")
    assert proxy.toxics() == {}
    populated = server.populate([{"name": "second", "listen": "127.0.0.1:0", "upstream": echo}])
    assert populated[0]["name"] == "second" and populated[0]["enabled"] is True
    assert set(client.proxies()) == {"echo", "second"}
    client.destroy(client.get_proxy("second"))
    assert proxy.destroy()
    with pytest.raises(NotFound):
        proxy.toxics()


def test_latency_is_added_within_tolerance(proxy):
    with connect(proxy) as sock:
        base = min(round_trip(sock) for _ in range(5))
        proxy.add_toxic(type="latency", stream="downstream", attributes={"latency": 150})
        delayed = min(round_trip(sock) for _ in range(3))
        proxy.add_toxic(type="latency", stream="upstream", attributes={"latency": 100, "jitter": 20})
        both = [round_trip(sock) for _ in range(5)]
    # Latency only ever adds: the delayed round trip is at least the delay.
    # Less the base it may fall short of it by a hair (CI saw 0.1459 s once):
    # the base's own few milliseconds, measured under load, need not recur.
    assert delayed >= 0.150 and delayed - base < 0.150 + 0.1
    # Under both, every round trip is at least both delays less
    # their jitter. A loaded machine can stall one round trip further (CI saw
    # 0.378 s once beside 0.24 s ones), so the ceiling is asked of the median.
    assert all(t >= 0.150 + 0.080 for t in both), both
    assert sorted(both)[2] < 0.150 + 0.120 + 0.1, both


def test_bandwidth_caps_the_rate(proxy):
    proxy.add_toxic(type="bandwidth", stream="upstream", attributes={"rate": 200})
    payload = b"x" * 100_000
    with connect(proxy) as sock:
        elapsed = round_trip(sock, payload)
    assert 0.45 <= elapsed < 1.0, f"100 kB at 200 kB/s took {elapsed:.2f} s"


def test_cut_refuses_and_drops_then_heal_restores(proxy):
    live = connect(proxy)
    round_trip(live)
    proxy.disable()
    live.settimeout(2)
    assert live.recv(10) == b"", "a cut drops the live connection"
    live.close()
    with pytest.raises(ConnectionRefusedError):
        connect(proxy)
    proxy.enable()
    with connect(proxy) as sock:
        round_trip(sock)


def test_reset_peer_resets_after_its_timeout(proxy):
    with connect(proxy) as sock:
        round_trip(sock)
        start = time.perf_counter()
        proxy.add_toxic(type="reset_peer", attributes={"timeout": 100})
        with pytest.raises(ConnectionResetError):
            while sock.recv(10):
                pass
        assert 0.09 <= time.perf_counter() - start < 0.5


def test_timeout_holds_data_then_closes(proxy):
    proxy.add_toxic(type="timeout", stream="upstream", attributes={"timeout": 200})
    with connect(proxy) as sock:
        start = time.perf_counter()
        sock.sendall(b"lost")
        assert sock.recv(10) == b""
        assert 0.19 <= time.perf_counter() - start < 0.6


def test_slicer_splits_into_delayed_slices(proxy):
    proxy.add_toxic(type="slicer", attributes={"average_size": 10, "size_variation": 0, "delay": 20_000})
    with connect(proxy) as sock:
        sock.sendall(b"y" * 100)
        chunks, start = [], time.perf_counter()
        while sum(map(len, chunks)) < 100:
            chunks.append(sock.recv(65536))
        elapsed = time.perf_counter() - start
    assert len(chunks) >= 5 and elapsed >= 0.15


def test_limit_data_closes_after_the_limit(proxy):
    proxy.add_toxic(type="limit_data", attributes={"bytes": 50})
    with connect(proxy) as sock:
        sock.sendall(b"z" * 100)
        got = b""
        while chunk := sock.recv(65536):
            got += chunk
    assert got == b"z" * 50


def test_slow_close_delays_the_close(proxy):
    proxy.add_toxic(type="slow_close", attributes={"delay": 300})
    with connect(proxy) as sock:
        round_trip(sock)
        start = time.perf_counter()
        sock.sendall(b"bye")
        assert sock.recv(10) == b""
        assert time.perf_counter() - start >= 0.29


def test_toxicity_zero_leaves_connections_alone(proxy):
    proxy.add_toxic(type="latency", toxicity=0.0, attributes={"latency": 500})
    with connect(proxy) as sock:
        assert round_trip(sock) < 0.2


def test_reset_heals_everything(server, proxy):
    proxy.add_toxic(type="latency", attributes={"latency": 500})
    proxy.disable()
    server.use().reset()
    healed = server.use().get_proxy("echo")
    assert healed.enabled and healed.toxics() == {}
    with connect(healed) as sock:
        assert round_trip(sock) < 0.2


def test_a_cut_link_keeps_its_port_so_a_heal_can_listen_on_it_again(server, proxy):
    """A disabled proxy holds on to its port: any socket on the machine
    might otherwise be given it (outgoing connections take ports from the
    same range as the proxies), and then the heal could not listen there
    again. In CI a reset so failed, the API closed its connection without
    an answer at every try, and a node stayed cut off after `heal-all`."""
    host, port = proxy.listen.rsplit(":", 1)
    proxy.disable()
    taker = socket.socket()
    try:
        with pytest.raises(OSError):
            taker.bind((host, int(port)))
    finally:
        taker.close()
    with pytest.raises(ConnectionRefusedError):
        connect(proxy)
    server.use().reset()
    with connect(server.use().get_proxy("echo")) as sock:
        round_trip(sock)
