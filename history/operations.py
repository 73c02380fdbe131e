"""A nemesis operation as plain data: what a strategy decides, the executor
makes and a schedule file holds. It sits on the ground floor because every
room passes it around: the strategies that choose it, the executor that
makes it, the shrinker that cuts schedules of it, and the simulator."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class NemesisOp:
    at_s: float
    f: str
    args: dict[str, Any] = field(default_factory=dict)
