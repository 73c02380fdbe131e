"""The link mesh: one Toxiproxy proxy per directed peer link i->j, named
`i-j`, so that node i reaches node j only through it. Cutting a link disables
its proxy; a toxic goes on the proxy's `upstream` stream (the direction i->j).
Given the target's framing, the proxies cut each link's traffic into
messages, and a `message` toxic acts on single ones (harness/toxiproxy/messages.py).
"""

from __future__ import annotations

from collections.abc import Iterable

from harness.link_applier import Link, LinkApplier
from harness.links import ToxiproxyServer
from harness.ports import free_port
from history.errors import ClusterError


def proxy_name(link: Link) -> str:
    return f"{link[0]}-{link[1]}"


class LinkMesh(LinkApplier):
    """`upstream(j)` is node j's raft address as the proxy server reaches it;
    proxies listen on `listen_host`, and nodes reach them at `route_host`
    (the same on one machine; the proxy container's name on Docker)."""

    def __init__(
        self,
        server: ToxiproxyServer,
        nodes: Iterable[str],
        upstream,
        listen_host: str = "127.0.0.1",
        route_host: str | None = None,
        framing: str = "",
    ) -> None:
        self.server = server
        self.nodes = tuple(nodes)
        self.links = [(i, j) for i in self.nodes for j in self.nodes if i != j]
        specs = [
            {
                "name": proxy_name(link),
                "listen": f"{listen_host}:{free_port()}",
                "upstream": upstream(link[1]),
                **({"framing": framing} if framing else {}),
            }
            for link in self.links
        ]
        created = {p["name"]: p for p in server.populate(specs)}
        self.listen = {link: created[proxy_name(link)]["listen"] for link in self.links}
        self.route_host = route_host or listen_host

    def route(self, link: Link) -> tuple[str, int]:
        return self.route_host, int(self.listen[link].rsplit(":", 1)[1])

    def _proxies(self, links: Iterable[Link]):
        """(link, proxy) for each of `links` in order, from one listing of the server."""
        listed = self.server.use().proxies()
        for link in sorted(links):
            proxy = listed.get(proxy_name(link))
            if proxy is None:
                raise ClusterError(f"link proxy {proxy_name(link)} is gone from {self.server.host}:{self.server.port}")
            yield link, proxy

    def cut(self, links: Iterable[Link]) -> list[Link]:
        done = []
        for link, proxy in self._proxies(links):
            proxy.disable()
            done.append(link)
        return done

    def restore(self, links: Iterable[Link]) -> None:
        for _, proxy in self._proxies(links):
            proxy.enable()

    def add_toxic(self, links: Iterable[Link], type: str, attributes: dict, name: str | None = None) -> list[Link]:
        """The toxic on each link, in place of one of the same name already there."""
        done = []
        for link, proxy in self._proxies(links):
            if (name or type) in proxy.toxics():
                proxy.destroy_toxic(name or type)
            proxy.add_toxic(type=type, stream="upstream", name=name or type, attributes=attributes)
            done.append(link)
        return done

    def applied(self, links: Iterable[Link], name: str) -> dict[Link, list[dict]]:
        """The messages the `message` toxic `name` acted on, on each of these
        links (one it is not on, or a proxy that frames nothing: none)."""
        return {link: (self.server.toxic(proxy_name(link), name) or {}).get("applied", []) for link in sorted(links)}

    def update_toxic(self, links: Iterable[Link], name: str, attributes: dict) -> None:
        """The toxic `name` on each of these links given new attributes (what it did so far kept)."""
        for link in sorted(links):
            self.server.update_toxic(proxy_name(link), name, attributes=attributes)

    def remove_toxic(self, links: Iterable[Link], name: str) -> None:
        for _, proxy in self._proxies(links):
            if name in proxy.toxics():
                proxy.destroy_toxic(name)

    def heal(self) -> None:
        """Every proxy enabled and free of toxics (Toxiproxy's reset)."""
        self.server.use().reset()

    def remove(self) -> None:
        listed = self.server.use().proxies()
        for link in self.links:
            if proxy_name(link) in listed:
                listed[proxy_name(link)].destroy()
