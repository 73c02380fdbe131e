"""Counts read as a person writes them: "1 anomaly", "2 anomalies", never
"1 anomalies", "1 cells" or "cut(s)"."""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from results.wording import counted

ROOT = Path(__file__).resolve().parents[2]


@given(st.integers(0, 10**6))
def test_one_is_singular_and_every_other_count_plural(number):
    assert counted(number, "anomaly", "anomalies") == f"{number} {'anomaly' if number == 1 else 'anomalies'}"
    assert counted(number, "cell") == f"{number} {'cell' if number == 1 else 'cells'}"


def test_no_message_hedges_its_plural():
    """The user-facing modules say what they counted, not "fault(s)"."""
    hedged = [
        f"{path.relative_to(ROOT)}:{number}"
        for folder in ("harness", "results", "checkers", "nemesis", "targets")
        for path in sorted((ROOT / folder).rglob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if re.search(r"\w\(s\)", line)
    ]
    assert hedged == []
