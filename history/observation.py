"""What a strategy sees: the nodes' states and statuses at a moment, the
faults in force and the nodes held down or damaged. A run's probes make it
(harness/run.py's `observe`), and so does the simulator; the strategies
(nemesis/strategy.py) decide from it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .coverage import context as context_of
from .coverage import role_of


@dataclass(frozen=True)
class Observation:
    """What the nodes say at a moment: each live node's state, and the kinds
    of faults in force; for the novelty search (nemesis/novelty.py), each
    live node's latest status as an events row, and the nodes held down
    (node -> the fault that holds it); the nodes whose files a fault damaged
    that are not seen repaired yet (`repaired`)."""

    states: dict[str, str]
    in_force: tuple[str, ...] = ()
    rows: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    gone: Mapping[str, str] = field(default_factory=dict)
    damaged: frozenset[str] = frozenset()

    def context(self) -> str:
        return context_of(self.in_force, self.states)

    def nodes_in(self, role: str) -> list[str]:
        return sorted(node for node, state in self.states.items() if role_of(state) == role)
