"""etcd's JSON gateway on the client port (`POST /v3/...`): keys and values
base64, 64-bit integers as strings, false and empty fields left out.

One keep-alive HTTP connection per client; requests run in a worker thread
so the harness's event loop is never blocked. Whether a request was sent is
what decides a failure's meaning: a connection refused before sending means
the operation did not happen; anything after sending leaves it unknown.
"""

from __future__ import annotations

import base64
import http.client
import json

from history.errors import ConnectionLost, TargetError


class NotSent(TargetError, ConnectionError):
    """The request never left: the operation definitely did not happen."""


class GatewayError(TargetError):
    """etcd answered with an error: its gRPC code and message."""

    def __init__(self, status: int, code: int | None, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def unb64(text: str) -> str:
    return base64.b64decode(text).decode()


class Gateway:
    def __init__(self, address: tuple[str, int], timeout_s: float) -> None:
        self.address = address
        self.connection = http.client.HTTPConnection(*address, timeout=timeout_s)

    def connect(self) -> None:
        try:
            self.connection.connect()
        except OSError as error:
            raise NotSent(str(error)) from None

    def post(self, path: str, body: dict, timeout_s: float) -> dict:
        """The answer's JSON; GatewayError for an error answer; NotSent if the
        request could not be sent; other OSErrors when the outcome is unknown."""
        if self.connection.sock is None:
            self.connect()
        self.connection.sock.settimeout(timeout_s)
        payload = json.dumps(body).encode()
        try:
            self.connection.request("POST", path, payload, {"Content-Type": "application/json"})
        except (BrokenPipeError, ConnectionResetError) as error:  # the keep-alive connection had gone: nothing sent
            self.connection.close()
            raise NotSent(str(error)) from None
        try:
            response = self.connection.getresponse()
            data = response.read()
        except (OSError, http.client.HTTPException) as error:
            self.connection.close()
            raise ConnectionLost(f"{type(error).__name__}: {error}") from None
        try:
            answer = json.loads(data) if data else {}
        except ValueError:
            raise GatewayError(response.status, None, data[:200].decode(errors="replace")) from None
        if response.status != 200 or "error" in answer:
            raise GatewayError(response.status, answer.get("code"), str(answer.get("message") or answer.get("error")))
        return answer

    def close(self) -> None:
        self.connection.close()


def post_once(address: tuple[str, int], path: str, body: dict, timeout_s: float) -> dict:
    """One request on a fresh connection (status polls, member lists)."""
    gateway = Gateway(address, timeout_s)
    try:
        return gateway.post(path, body, timeout_s)
    finally:
        gateway.close()
