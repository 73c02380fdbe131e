"""The checker result and verdict shapes of DESIGN.md, and how results merge."""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

MAX_ANOMALIES = 50


def result(anomalies: list[dict], stats: dict | None = None) -> dict:
    """A safety checker's result: valid unless it found anomalies (at most
    MAX_ANOMALIES are listed; `stats.anomalies` counts them all)."""
    stats = dict(stats or {})
    stats["anomalies"] = len(anomalies)
    return {"valid": not anomalies, "anomalies": anomalies[:MAX_ANOMALIES], "stats": stats}


def merge(results: dict[str, dict]) -> dict:
    """false if any checker is false, "unknown" if none is false but one could
    not decide, true otherwise (Jepsen's merge)."""
    wrong = {name: r["valid"] for name, r in results.items() if not _known(r["valid"])}
    if wrong:  # a typo ("ture") would otherwise pass for "unknown", unseen
        raise ValueError(f"checker results not true, false or unknown: {wrong}")
    valids = [r["valid"] for r in results.values()]
    if any(v is False for v in valids):
        valid: bool | str = False
    elif any(v != True for v in valids) or not valids:  # noqa: E712 - "unknown" is neither
        valid = "unknown"
    else:
        valid = True
    return {"valid": valid, "checkers": results}


def run_checker(check: Callable[..., dict], *tables: pd.DataFrame) -> dict:
    """A checker that raises, or answers other than true, false or unknown,
    becomes `unknown` with the reason, never a crash (nor a silent unknown)."""
    try:
        found = check(*tables)
    except Exception as error:  # a checker bug must not lose the other verdicts
        return {"valid": "unknown", "anomalies": [], "stats": {}, "error": f"{type(error).__name__}: {error}"}
    valid = found.get("valid") if isinstance(found, dict) else None
    if not _known(valid):
        return {"valid": "unknown", "anomalies": [], "stats": {},
                "error": f"{getattr(check, '__name__', check)} answered valid={valid!r}: not true, false or unknown"}  # fmt: skip
    return found


def _known(valid) -> bool:
    """Whether `valid` is one of DESIGN.md's: true, false or "unknown"."""
    return isinstance(valid, bool) or (isinstance(valid, str) and valid == "unknown")
