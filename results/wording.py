"""How counts read in what users see: "1 anomaly", "2 anomalies"; never
"1 anomalies", or a plural hedged with an "s" in brackets."""

from __future__ import annotations


def counted(number: int, one: str, many: str | None = None) -> str:
    """`number` and the noun it counts, singular for exactly one."""
    return f"{number} {one if number == 1 else many or one + 's'}"
