"""The anomaly kinds, one registry of them (Elle's named cases): each kind
is found by one function of its checker's module, decorated with `case`,
whose docstring defines it. The decorator names every anomaly the function
returns with its kind, so a kind is spelled once, where it is defined; and
it records what the live verdict and the documentation read of a kind (`ANOMALIES`, complete once checkers/registry.py has imported every
checker; `python -m checkers.registry` writes docs/anomalies.md from it)."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ParamSpec, TypeAlias

from history.errors import Defect

Anomaly: TypeAlias = dict[str, Any]
P = ParamSpec("P")


@dataclass(frozen=True)
class Kind:
    """An anomaly kind: its name, its checker, what it means (its case's
    docstring, first paragraph), and whether only the nodes' final copies
    show it (read once a run is healed, so a live verdict never holds it)."""

    name: str
    checker: str
    meaning: str
    final_copies: bool


ANOMALIES: dict[str, Kind] = {}


def case(
    checker: str, kind: str, final_copies: bool = False
) -> Callable[[Callable[P, list[Anomaly]]], Callable[P, list[Anomaly]]]:
    """The decorated function finds the anomalies of `kind` for `checker`;
    each it returns is named with the kind (first, as every anomaly is)."""

    def registered(found: Callable[P, list[Anomaly]]) -> Callable[P, list[Anomaly]]:
        meaning = inspect.getdoc(found)
        if not meaning:
            raise Defect(f"the case {found.__qualname__} of {kind!r} has no docstring to define it")
        if kind in ANOMALIES:
            raise Defect(f"the anomaly kind {kind!r} is defined twice ({ANOMALIES[kind].checker}, {checker})")
        ANOMALIES[kind] = Kind(kind, checker, " ".join(meaning.split("\n\n")[0].split()), final_copies)
        return more_of(kind)(found)

    return registered


def more_of(kind: str) -> Callable[[Callable[P, list[Anomaly]]], Callable[P, list[Anomaly]]]:
    """The decorated function finds more anomalies of `kind`, which its
    case (earlier in the same module) defines, where the case cannot look:
    a run checked in windows, say. Each it returns is named with the kind."""
    if kind not in ANOMALIES:
        raise Defect(f"more of {kind!r}, which no case defines")

    def named(found: Callable[P, list[Anomaly]]) -> Callable[P, list[Anomaly]]:
        @functools.wraps(found)
        def of_kind(*args: P.args, **kwargs: P.kwargs) -> list[Anomaly]:
            return [{"kind": kind, **anomaly} for anomaly in found(*args, **kwargs)]

        return of_kind

    return named
