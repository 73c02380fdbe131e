"""The anomaly kinds are one registry (checkers/cases.py, filled by the
checkers checkers/registry.py lists): each kind defined once, by the
docstring of the one function that finds it, and spelled nowhere else."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from checkers.cases import ANOMALIES, case, more_of
from checkers.registry import NAMES, final_copy_kinds, kinds_of
from history.errors import Defect

ROOT = Path(__file__).resolve().parents[2]
# Not anomalies: a verdict's signatures (what a run failed of) carry a kind of their own.
SIGNATURES = {"checkers/signatures.py", "checkers/verdict.py"}
NAMER = "checkers/cases.py"  # the decorator that names them


def test_every_kind_belongs_to_a_checker_of_the_registry_and_says_what_it_means():
    assert ANOMALIES and {kind.checker for kind in ANOMALIES.values()} <= set(NAMES)
    assert all(kind.meaning and kind.meaning[0].isupper() for kind in ANOMALIES.values())
    assert kinds_of("availability") == []
    assert final_copy_kinds("committed-data-loss") == {
        "lost-acknowledged-append",
        "divergent-committed-logs",
        "duplicate-append",
        "failed-append-committed",
    }
    assert final_copy_kinds("membership") == {"lost-voter-change"}


def test_a_case_names_each_anomaly_it_finds_with_its_kind_first():
    from checkers.progress import no_progress

    [found] = no_progress(12, 0)
    assert list(found)[0] == "kind" and found["kind"] == "no-progress"


def test_a_kind_is_defined_once_by_a_case_with_a_docstring():
    with pytest.raises(Defect, match="defined twice"):

        @case("progress", "no-progress")
        def again() -> list:
            """No progress, again."""
            return []

    with pytest.raises(Defect, match="no docstring"):

        @case("progress", "undocumented-kind")
        def undocumented() -> list:
            return []

    assert "undocumented-kind" not in ANOMALIES
    with pytest.raises(Defect, match="no case defines"):
        more_of("never-defined")


def test_no_checker_module_spells_an_anomalys_kind_itself():
    """A kind is named by its case's decorator, so one spelled in a dict
    would be a kind no docstring defines."""
    found = []
    for path in sorted((ROOT / "checkers").glob("*.py")):
        name = str(path.relative_to(ROOT))
        if name in SIGNATURES or name == NAMER:
            continue
        for node in ast.walk(ast.parse(path.read_text(), name)):
            if isinstance(node, ast.Dict):
                found += [
                    f"{name}:{key.lineno}" for key in node.keys if isinstance(key, ast.Constant) and key.value == "kind"
                ]
    assert found == []
