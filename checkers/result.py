"""The checker result and verdict shapes of docs/organisation.md, and how results merge."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from history.errors import Defect

from .checker import Result, Validity, validity

MAX_ANOMALIES = 50


def result(anomalies: list[dict[str, Any]], stats: Mapping[str, Any] | None = None) -> Result:
    """A safety checker's result: valid unless it found anomalies (at most
    MAX_ANOMALIES are listed; `stats.anomalies` counts them all)."""
    counted = dict(stats or {})
    counted["anomalies"] = len(anomalies)
    return {"valid": not anomalies, "anomalies": anomalies[:MAX_ANOMALIES], "stats": counted}


def merge(results: Mapping[str, Result]) -> Result:
    """false if any checker is false, "unknown" if none is false but one could
    not decide, true otherwise (Jepsen's merge); a Defect, naming the
    checker, for a validity that is none of these."""
    valids: list[Validity] = []
    for name, found in results.items():
        try:
            valids.append(validity(found["valid"]))
        except Defect:
            raise Defect(f"checker {name!r} answered valid={found['valid']!r}: not true, false or unknown") from None
    valid: Validity
    if False in valids:
        valid = False
    elif "unknown" in valids or not valids:
        valid = "unknown"
    else:
        valid = True
    return {"valid": valid, "checkers": dict(results)}


def run_checker(check: Callable[[], Result], name: str) -> Result:
    """A checker that raises, or answers other than true, false or unknown,
    becomes `unknown` with the reason, never a crash (nor a silent unknown)."""
    try:
        found = check()
    except Exception as error:  # a checker bug must not lose the other verdicts
        return {"valid": "unknown", "anomalies": [], "stats": {}, "error": f"{type(error).__name__}: {error}"}
    valid = found.get("valid") if isinstance(found, dict) else None
    try:
        validity(valid)
    except Defect:
        return {
            "valid": "unknown",
            "anomalies": [],
            "stats": {},
            "error": f"{name} answered valid={valid!r}: not true, false or unknown",
        }
    return found
