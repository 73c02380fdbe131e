"""What a checker is, for `checkers/verdict.py` to run them all alike: a
name, whether it applies to a run (its tables and the capabilities its
target declared), and the check. It is a protocol, as Jepsen's `Checker`
is: a checker is anything with these three, and `Rule` makes one of two
functions. Validity is typed: true, false or "unknown" (docs/organisation.md,
"Verdicts"), and `validity` refuses anything else, so a typo ("ture")
cannot pass for "unknown"."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Literal, Protocol, TypeAlias

import pandas as pd

from history.errors import Defect

Validity: TypeAlias = Literal[True, False, "unknown"]
# A checker's result (docs/organisation.md): valid, anomalies, stats, and an error where it could not decide.
Result: TypeAlias = dict[str, Any]


def validity(value: object) -> Validity:
    """`value` as a validity; a Defect for anything but true, false or "unknown"."""
    if value is True or value is False or value == "unknown":
        return value
    raise Defect(f'a validity is true, false or "unknown", not {value!r}')


@dataclass(frozen=True)
class Tables:
    """What every checker reads: a run's history, node events and final
    copies (`copies`: the table, or what reads it when a checker first asks,
    as a run checked in pieces gives them), the capabilities its target declared (run.json; None for a run
    that recorded none), the time the searching checkers may spend, and the
    functions the clients called where the history given holds only some of
    its rows and the client figures tallied over all of them (a run checked
    in pieces: checkers/pieces.py)."""

    history: pd.DataFrame
    events: pd.DataFrame
    copies: pd.DataFrame | Callable[[], pd.DataFrame]
    capabilities: Mapping[str, Any] | None = None
    budget_s: float = 30.0
    functions: frozenset[str] | None = None
    figures: Mapping[str, Any] | None = None

    @cached_property
    def final(self) -> pd.DataFrame:
        """The nodes' final copies, read once, when a checker first asks (few checkers do)."""
        return self.copies() if callable(self.copies) else self.copies

    @cached_property
    def client_fs(self) -> set[str]:
        """The functions the clients called (not the nemesis's): worked out once,
        as several checkers ask whether they apply by it."""
        if self.functions is not None:
            return set(self.functions)
        return set(self.history.loc[self.history["process"] >= 0, "f"].dropna().unique())

    @cached_property
    def client_figures(self) -> dict[str, Any]:
        """The client operations' figures by fault window, worked out once for
        `availability` and `progress` (a run checked in pieces gives its own, `figures`)."""
        if self.figures is not None:
            return dict(self.figures)
        from .availability import client_figures

        return client_figures(self.history)


class Checker(Protocol):
    """A checker: its verdict's name, whether it applies to these tables, its
    check, and what it can judge of a run's first part (`so_far`, below)."""

    @property
    def name(self) -> str: ...

    @property
    def so_far(self) -> Callable[[Tables], Result] | None: ...

    def applies(self, tables: Tables) -> bool: ...

    def check(self, tables: Tables) -> Result: ...


@dataclass(frozen=True)
class Rule:
    """A checker made of two functions of the tables.

    `so_far`: what it judges of a run's first part, so that a violation
    found there stays one in the whole run (`run --check-live`); None where
    it judges only a whole run. Only a check of the history and the events
    whose findings nothing later undoes qualifies: two leaders in an epoch, a
    vote granted twice, a voter change taken while another was uncommitted,
    a log cut below its high watermark stay so; an operation still waiting
    for its answer is indeterminate to `linearizable` (it may take effect at
    any point after its call, or never), so an order none of its outcomes
    allows is not one a later answer allows. The cases only the final
    copies show (checkers/cases.py's `final_copies`) are judged after
    healing. Not so: availability, and node-crashes, whose excuse for a stop
    may be confirmed after it."""

    name: str
    when: Callable[[Tables], bool]
    then: Callable[[Tables], Result]
    so_far: Callable[[Tables], Result] | None = None

    def applies(self, tables: Tables) -> bool:
        return self.when(tables)

    def check(self, tables: Tables) -> Result:
        return self.then(tables)


def always(tables: Tables) -> bool:
    """A checker that applies to every run."""
    return True
