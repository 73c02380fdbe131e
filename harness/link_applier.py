"""What the nemesis asks of whatever cuts a cluster's links: the link mesh
of proxies (harness/mesh.py), iptables rules (harness/iptables_links.py),
fronts that name each connection's source (harness/attributed_links.py),
or nothing at all (DirectLinks, where no link can be cut). Each one
subclasses this protocol, so declaring it and implementing it cannot drift
apart; `harness/backends.py` picks one per backend."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

# A directed peer link: (from, to).
Link = tuple[str, str]


class LinkApplier(Protocol):
    # Every directed peer link of the cluster.
    links: list[Link]

    def cut(self, links: Iterable[Link]) -> list[Link]:
        """Cut these links; the ones actually cut."""
        ...

    def restore(self, links: Iterable[Link]) -> None:
        """These links whole again (undoes `cut` of them alone: a brief fault's
        own cut, where another fault's stay as they are)."""
        ...

    def add_toxic(self, links: Iterable[Link], type: str, attributes: dict, name: str | None = None) -> list[Link]:
        """A Toxiproxy toxic (latency, ...) on these links; the ones it went on.
        An applier that cannot raises ValueError naming what it takes instead."""
        ...

    def heal(self) -> None:
        """Every link whole again, every toxic gone."""
        ...

    def remove(self) -> None:
        """Undo whatever this applier made (proxies, rules, fronts)."""
        ...
