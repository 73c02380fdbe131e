"""The harness's handle on a Toxiproxy server, through toxiproxy-python.

toxiproxy-python keeps the server's address in class attributes of its
`APIConsumer`; `ToxiproxyServer` points them at one URL and adds the calls the
client lacks (populate, update a toxic). With `--toxiproxy URL` the same code
drives Shopify's server.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from urllib.parse import urlsplit

from toxiproxy import Toxiproxy
from toxiproxy.api import APIConsumer
from toxiproxy.exceptions import NotFound

from harness.ownership import Ownership
from harness.ports import free_port
from history.errors import ClusterError, UsageError

START_TIMEOUT_S = 10.0


class ToxiproxyServer:
    def __init__(self, url: str) -> None:
        parts = urlsplit(url if "://" in url else f"http://{url}")
        if not parts.hostname or not parts.port:
            raise UsageError(f"expected http://HOST:PORT, got {url!r}")
        self.host, self.port = parts.hostname, parts.port
        self.client = Toxiproxy()

    def use(self) -> Toxiproxy:
        """The toxiproxy-python client, aimed at this server."""
        APIConsumer.host, APIConsumer.port = self.host, self.port
        return self.client

    def populate(self, proxies: list[dict]) -> list[dict]:
        self.use()
        return APIConsumer.post("/populate", json=proxies).json()["proxies"]

    def update_toxic(self, proxy: str, toxic: str, **changes) -> dict:
        self.use()
        return APIConsumer.post(f"/proxies/{proxy}/toxics/{toxic}", json=changes).json()

    def toxic(self, proxy: str, toxic: str) -> dict | None:
        """A toxic's JSON as the server gives it (with splitbrain's `message`
        toxic, the messages it acted on); None: no such proxy or toxic."""
        self.use()
        try:
            return APIConsumer.get(f"/proxies/{proxy}/toxics/{toxic}").json()
        except NotFound:
            return None


def wait_for_api(server: ToxiproxyServer, timeout_s: float = START_TIMEOUT_S) -> None:
    """Wait until the server answers its API (a container takes a moment)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if server.use().version():
                return
        except OSError:  # requests' connection errors are OSErrors
            pass
        time.sleep(0.1)
    raise ClusterError(f"no Toxiproxy API at {server.host}:{server.port} within {timeout_s} s")


class OwnToxiproxy:
    """splitbrain's server as a child process on 127.0.0.1, for the local backend."""

    def __init__(self, port: int | None = None, ownership: Ownership | None = None) -> None:
        self.port = port or free_port()
        self.process: subprocess.Popen | None = None
        self.ownership = ownership

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, log_path: str | os.PathLike = os.devnull) -> OwnToxiproxy:
        with open(log_path, "ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "harness.toxiproxy", "--listen", f"127.0.0.1:{self.port}"],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env=self.ownership.environment() if self.ownership else None,
            )
        if self.ownership:
            self.ownership.process(self.process.pid)
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise ClusterError(f"toxiproxy server exited with {self.process.returncode}; see {log_path}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return self
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise ClusterError(f"toxiproxy server did not listen on {self.port} within {START_TIMEOUT_S} s")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def __enter__(self) -> OwnToxiproxy:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
