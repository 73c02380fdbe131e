"""Shrinking a failing run's schedule (`splitbrain shrink`): fewer faults,
and a shorter run, that still fail. Real runs are not deterministic, so a
candidate is tried up to N times and counts as failing if any trial fails.

The schedule is cut into groups that can go alone: a fault with what
undoes it (and anything made while it was in force, such as a guided
run's second fault or a churn's bounces). The final heal-all always stays.
First each group is tried alone (a bug often needs one fault); failing
that, groups are dropped one at a time while the rest still fails. Then the
run ends one interval after the last fault that is left.

Pure: `fails(schedule, time_limit_s)` runs the trials.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from history.faults import HEAL_ALL, INSTANT
from history.operations import NemesisOp


def groups(schedule: list[NemesisOp]) -> tuple[list[list[NemesisOp]], NemesisOp | None]:
    """(the removable groups in order, the final heal-all)."""
    ops = list(schedule)
    final = ops.pop() if ops and ops[-1].f == HEAL_ALL else None
    found: list[list[NemesisOp]] = []
    open_group: list[NemesisOp] | None = None
    for op in ops:
        if open_group is None:
            open_group = []
            found.append(open_group)
        open_group.append(op)
        closes = "of" in op.args or op.f == HEAL_ALL or (op.f in INSTANT and "during" not in op.args)
        if closes:
            open_group = None
    return found, final


def flatten(kept: list[list[NemesisOp]], final: NemesisOp | None, time_limit_s: float) -> list[NemesisOp]:
    ops = [op for group in kept for op in group]
    return ops + ([NemesisOp(time_limit_s, HEAL_ALL, final.args)] if final else [])


@dataclass
class Shrunk:
    schedule: list[NemesisOp]
    time_limit_s: float
    faults: int  # groups left
    tried: list[str] = field(default_factory=list)  # a line per candidate: what it left out, and the outcome


def shrink(
    schedule: list[NemesisOp], time_limit_s: float, interval_s: float, fails: Callable[[list[NemesisOp], float], bool]
) -> Shrunk:
    """The smallest schedule found that still fails (the original's if nothing smaller does)."""
    found, final = groups(schedule)
    tried: list[str] = []

    def end_of(kept: list[list[NemesisOp]]) -> float:
        """One interval after the last fault left, never past the original's end."""
        return min(time_limit_s, max(op.at_s for group in kept for op in group) + interval_s) if kept else time_limit_s

    def attempt(kept: list[list[NemesisOp]], why: str) -> bool:
        limit = end_of(kept)
        failed = fails(flatten(kept, final, limit), limit)
        tried.append(f"{why}: {'fails' if failed else 'passes'}")
        return failed

    def result(kept: list[list[NemesisOp]]) -> Shrunk:
        return Shrunk(flatten(kept, final, end_of(kept)), end_of(kept), len(kept), tried)

    for number, group in enumerate(found, start=1):
        if len(found) > 1 and attempt([group], f"fault {number} alone ({describe(group)})"):
            return result([group])
    kept = list(found)
    dropped = True
    while dropped and len(kept) > 1:
        dropped = False
        for index in range(len(kept) - 1, -1, -1):
            candidate = kept[:index] + kept[index + 1 :]
            if attempt(candidate, f"without {describe(kept[index])}"):
                kept, dropped = candidate, True
                break
    return result(kept)


def describe(group: list[NemesisOp]) -> str:
    first = group[0]
    detail = first.args.get("topology") or first.args.get("target") or ""
    return f"{first.f}{' ' + detail if detail else ''} at {first.at_s:g} s"
