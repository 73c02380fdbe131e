"""Link appliers that are not the proxy mesh.

Jepsen's way to cut links (`--net iptables`, Docker backend): DROP rules
inside the containers, which run with NET_ADMIN. Cutting i->j drops, in j,
every packet from i: client traffic is cut too, and no proxy is needed.
Latency and other toxics need the link proxies; this applier refuses them.
"""

from __future__ import annotations

from collections.abc import Iterable

from harness.link_applier import Link, LinkApplier
from history.errors import SettingError

CHAIN = "INPUT"


class IptablesLinks(LinkApplier):
    def __init__(self, cluster) -> None:
        self.cluster = cluster
        self.links = [(i, j) for i in cluster.ids for j in cluster.ids if i != j]

    def cut(self, links: Iterable[Link]) -> list[Link]:
        done = []
        for src, dst in sorted(links):
            self.cluster.exec(dst, ["iptables", "-A", CHAIN, "-s", self.cluster.ip(src), "-j", "DROP"])
            done.append((src, dst))
        return done

    def restore(self, links: Iterable[Link]) -> None:
        """Each cut's rule deleted (one per cut; a stopped container lost its rules already)."""
        for src, dst in sorted(links):
            if self.cluster.running(dst):
                self.cluster.exec(dst, ["iptables", "-D", CHAIN, "-s", self.cluster.ip(src), "-j", "DROP"])

    def add_toxic(self, links, type: str, attributes: dict, name: str | None = None) -> list[Link]:
        raise SettingError("net", f"iptables cannot add a {type} toxic: use the link proxies (proxy)")

    def heal(self) -> None:
        """Flush the rules of every running container (a stopped one lost its
        network namespace, and its rules with it)."""
        for node in self.cluster.ids:
            if self.cluster.running(node):
                self.cluster.exec(node, ["iptables", "-F", CHAIN])

    def remove(self) -> None:
        """Nothing outlives the containers."""


class DirectLinks(LinkApplier):
    """Nodes that dial each other directly (SSH hosts without a link proxy; a
    `cluster up` of a target without per-link routes, which outlives the
    fronts that would cut them): there are no links to cut, and saying so is
    the only thing it does."""

    def __init__(self, cluster) -> None:
        self.links = [(i, j) for i in cluster.ids for j in cluster.ids if i != j]

    def cut(self, links) -> list[Link]:
        raise SettingError("net", "link faults need per-link proxies (or iptables on Docker)")

    def restore(self, links) -> None:
        """No link was ever cut."""

    def add_toxic(self, links, type: str, attributes: dict, name: str | None = None) -> list[Link]:
        raise SettingError("net", "link faults need per-link proxies")

    def heal(self) -> None:
        """No link was ever cut."""

    def remove(self) -> None:
        """Nothing was made."""
