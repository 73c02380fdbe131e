"""A Toxiproxy-compatible server: Toxiproxy's REST API, JSON shapes and
status codes over the proxies of `proxy.py`, standard library asyncio only.

splitbrain drives it only through toxiproxy-python, so a real Toxiproxy can
stand in for it by URL. Run it with `splitbrain toxiproxy` or
`python -m harness.toxiproxy --listen HOST:PORT` (no third-party imports, so
it runs in the bare node image too).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import signal
import sys
from http import HTTPStatus
from typing import NoReturn
from urllib.parse import unquote, urlsplit

from .proxy import Proxy, split_address
from .toxics import InvalidToxic, Toxic

VERSION = "2.9.0"
MAX_BODY = 1 << 20
log = logging.getLogger("toxiproxy")


class ApiError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class ToxiproxyApi:
    def __init__(self) -> None:
        self.proxies: dict[str, Proxy] = {}

    async def dispatch(self, method: str, path: str, body: bytes) -> tuple[int, object]:
        parts = [unquote(p) for p in urlsplit(path).path.strip("/").split("/") if p]
        try:
            payload = json.loads(body) if body.strip() else None
        except ValueError as error:
            return 400, _error(400, f"bad JSON body: {error}")
        try:
            return await self._route(method, parts, payload)
        except ApiError as error:
            return error.status, _error(error.status, str(error))
        except InvalidToxic as error:
            return 400, _error(400, str(error))
        except OSError as error:  # a proxy could not listen again (a reset's): an answer, not a dropped connection
            return 500, _error(500, str(error))

    async def _route(self, method: str, parts: list[str], payload) -> tuple[int, object]:
        if parts == ["version"] and method == "GET":
            return 200, VERSION
        if parts == ["reset"] and method == "POST":
            for proxy in self.proxies.values():
                for name in list(proxy.toxics):
                    proxy.remove_toxic(name)
                await proxy.set_enabled(True)
            return 204, None
        if parts == ["populate"] and method == "POST":
            return 201, {"proxies": [p.to_json() for p in await self._populate(payload)]}
        if parts == ["proxies"]:
            if method == "GET":
                return 200, {name: proxy.to_json() for name, proxy in self.proxies.items()}
            if method == "POST":
                return 201, (await self._create(_object(payload))).to_json()
        if len(parts) >= 2 and parts[0] == "proxies":
            found = self.proxies.get(parts[1])
            if found is None:
                raise ApiError(404, "proxy not found")
            proxy = found
            if len(parts) == 2:
                return await self._proxy(method, proxy, payload)
            if parts[2] == "toxics" and len(parts) == 3:
                if method == "GET":
                    return 200, [t.to_json() for t in proxy.toxics.values()]
                if method == "POST":
                    toxic = Toxic.from_json(_object(payload))
                    if toxic.name in proxy.toxics:
                        raise ApiError(409, "toxic already exists")
                    self._join_group(toxic)
                    proxy.add_toxic(toxic)
                    return 200, toxic.to_json()
            if parts[2] == "toxics" and len(parts) == 4:
                return self._toxic(method, proxy, parts[3], payload)
        raise ApiError(404 if method in ("GET", "POST", "PATCH", "DELETE") else 405, "not found")

    def _join_group(self, toxic: Toxic) -> None:
        """A `message` toxic of a group counts the messages it sees and acts
        on with the group's toxics on other proxies."""
        group = toxic.attributes.get("group") if toxic.type == "message" else ""
        if not group:
            return
        for proxy in self.proxies.values():
            for other in proxy.toxics.values():
                if other.type == "message" and other.attributes.get("group") == group:
                    toxic.tally = other.tally
                    return

    async def _create(self, spec: dict) -> Proxy:
        name = spec.get("name")
        if not name or not isinstance(name, str):
            raise ApiError(400, "missing required field: name")
        if not spec.get("upstream"):
            raise ApiError(400, "missing required field: upstream")
        if name in self.proxies:
            raise ApiError(409, "proxy already exists")
        try:
            proxy = Proxy(
                name,
                spec.get("listen") or "127.0.0.1:0",
                spec["upstream"],
                spec.get("enabled", True) is not False,
                framing=str(spec.get("framing") or ""),
            )
            await proxy.start()
        except ValueError as error:
            raise ApiError(400, str(error)) from None
        except OSError as error:
            raise ApiError(500, f"listen {spec.get('listen')}: {error}") from None
        self.proxies[name] = proxy
        return proxy

    async def _populate(self, payload) -> list[Proxy]:
        specs = payload.get("proxies") if isinstance(payload, dict) else payload
        if not isinstance(specs, list) or not all(isinstance(s, dict) for s in specs):
            raise ApiError(400, "populate takes a list of proxies")
        created = []
        for spec in specs:
            existing = self.proxies.get(spec.get("name"))
            if existing is not None:
                await existing.close()
                del self.proxies[existing.name]
            created.append(await self._create(spec))
        return created

    async def _proxy(self, method: str, proxy: Proxy, payload) -> tuple[int, object]:
        if method == "GET":
            return 200, proxy.to_json()
        if method == "DELETE":
            await proxy.close()
            del self.proxies[proxy.name]
            return 204, None
        if method in ("POST", "PATCH"):
            spec = _object(payload)
            moved = any(key in spec and spec[key] != getattr(proxy, key) for key in ("listen", "upstream"))
            try:
                for key in ("listen", "upstream"):
                    if key in spec:
                        split_address(spec[key])
                        setattr(proxy, key, spec[key])
            except ValueError as error:
                raise ApiError(400, str(error)) from None
            enabled = spec.get("enabled", proxy.enabled) is not False
            try:
                if moved:
                    await proxy.close()
                elif not enabled:
                    await proxy.stop()
                await proxy.set_enabled(enabled)
            except OSError as error:
                raise ApiError(500, f"listen {proxy.listen}: {error}") from None
            return 200, proxy.to_json()
        raise ApiError(405, "method not allowed")

    def _toxic(self, method: str, proxy: Proxy, name: str, payload) -> tuple[int, object]:
        toxic = proxy.toxics.get(name)
        if toxic is None:
            raise ApiError(404, "toxic not found")
        if method == "GET":
            return 200, toxic.to_json()
        if method == "DELETE":
            proxy.remove_toxic(name)
            return 204, None
        if method in ("POST", "PATCH"):
            spec = _object(payload)
            if "toxicity" in spec:
                changed = Toxic.from_json({"type": toxic.type, "toxicity": spec["toxicity"]})
                toxic.toxicity = changed.toxicity
            toxic.update_attributes(spec.get("attributes") or {})
            return 200, toxic.to_json()
        raise ApiError(405, "method not allowed")

    async def close(self) -> None:
        for proxy in self.proxies.values():
            await proxy.close()
        self.proxies.clear()


def _object(payload) -> dict:
    if not isinstance(payload, dict):
        raise ApiError(400, "the body must be a JSON object")
    return payload


def _error(status: int, message: str) -> dict:
    return {"error": message, "status": status}


async def _serve_http(api: ToxiproxyApi, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while request_line := await reader.readline():
            method, target, _ = request_line.decode("latin-1").split(" ", 2)
            length = 0
            while (header := await reader.readline()) not in (b"\r\n", b"\n", b""):
                key, _, value = header.decode("latin-1").partition(":")
                if key.strip().lower() == "content-length":
                    length = int(value.strip())
            if length > MAX_BODY:
                raise ValueError("body too large")
            body = await reader.readexactly(length) if length else b""
            status, payload = await api.dispatch(method.upper(), target, body)
            if payload is None:
                data, kind = b"", "text/plain"
            elif isinstance(payload, str):
                data, kind = payload.encode(), "text/plain"
            else:
                data, kind = json.dumps(payload).encode(), "application/json"
            head = (
                f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\n"
                f"Content-Type: {kind}\r\nContent-Length: {len(data)}\r\n\r\n"
            )
            writer.write(head.encode("latin-1") + data)
            await writer.drain()
    except (OSError, ValueError, asyncio.IncompleteReadError):
        pass
    finally:
        writer.close()


async def serve(host: str, port: int, ready: asyncio.Event | None = None, stop: asyncio.Event | None = None) -> None:
    """Serve the API until `stop` is set (or SIGTERM/SIGINT when run as a program)."""
    api = ToxiproxyApi()
    stop = stop or asyncio.Event()
    server = await asyncio.start_server(lambda r, w: _serve_http(api, r, w), host, port, reuse_address=True)
    log.info("toxiproxy API on %s:%d", host, server.sockets[0].getsockname()[1])
    if ready is not None:
        ready.set()
    try:
        await stop.wait()
    finally:
        server.close()
        await api.close()


class _Parser(argparse.ArgumentParser):
    """A bad command line is one line, as everywhere in splitbrain."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message}\n")


def main(argv: list[str] | None = None) -> int:
    parser = _Parser(prog="splitbrain toxiproxy", description=__doc__.split("\n\n")[0].replace("\n", " "))
    parser.add_argument("--listen", default="127.0.0.1:8474", help="HOST:PORT of the REST API")
    args = parser.parse_args(argv)
    try:
        host, port = split_address(args.listen)
    except ValueError as error:
        parser.error(f"--listen: {error}")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")

    async def run() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await serve(host, port, stop=stop)

    try:
        asyncio.run(run())
    except OSError as error:
        print(f"splitbrain toxiproxy: --listen {args.listen}: {error}", file=sys.stderr)
        return 2
    return 0
