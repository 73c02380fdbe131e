"""Every checker a verdict may hold, in the verdict's order, and so every
anomaly kind (checkers/cases.py's `ANOMALIES`, which each checker's module
fills as it is imported here). Adding a checker is its module and its line
here: the verdict, the live verdict, the gate, the archive, Spark and the
documentation read it from here.

`python -m checkers.registry > docs/anomalies.md` writes the page of the
checkers and their anomaly kinds; a test fails while the committed page
differs from what this prints."""

from __future__ import annotations

import sys

from . import availability, crashes, data_loss, elections, linearizable, membership, mutex, progress
from .cases import ANOMALIES, Kind
from .checker import Checker

CHECKERS: tuple[Checker, ...] = (
    elections.ELECTION_SAFETY_CHECKER,
    elections.SINGLE_LEADER_CHECKER,
    data_loss.CHECKER,
    linearizable.CHECKER,
    mutex.CHECKER,
    membership.CHECKER,
    crashes.CHECKER,
    progress.CHECKER,
    availability.CHECKER,
)
NAMES = tuple(checker.name for checker in CHECKERS)


def kinds_of(name: str) -> list[Kind]:
    """The anomaly kinds of checker `name`, in the order its module defines them."""
    return [kind for kind in ANOMALIES.values() if kind.checker == name]


def final_copy_kinds(name: str) -> frozenset[str]:
    """The kinds of checker `name` that only the nodes' final copies show."""
    return frozenset(kind.name for kind in kinds_of(name) if kind.final_copies)


def page() -> str:
    """Markdown: each checker, whether a live verdict judges it, and its anomaly kinds with what each means."""
    out = [
        "# Checkers and anomaly kinds",
        "",
        "Every checker a verdict may hold, in the verdict's order, and every kind",
        "of anomaly each reports, defined by the docstring of the function that",
        "finds it. Written by `python -m checkers.registry > docs/anomalies.md`",
        "from `checkers/registry.py`; a test fails while this page differs from it.",
        "A kind marked *after healing* is shown only by the nodes' final copies,",
        "so `run --check-live` does not judge it while the run goes.",
    ]
    for checker in CHECKERS:
        out += ["", f"## {checker.name}", ""]
        out += ["Judged live (`run --check-live`)." if checker.so_far else "Judged once the run is over."]
        kinds = kinds_of(checker.name)
        out += [""] + ([] if kinds else ["Reports figures only; never false."])
        for kind in kinds:
            after = " *(after healing)*" if kind.final_copies else ""
            out += [f"- `{kind.name}`{after}: {kind.meaning}"]
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    sys.stdout.write(page())
