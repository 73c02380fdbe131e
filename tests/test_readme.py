"""README's walk: every bug example README gives finds its bug with the
settings shown, run as a newcomer runs it (`./scripts/run.sh ...`, a fresh
seed each time), and says so with the checker README names. The rate over
many runs is `benchmarks/readme_examples.py`'s to show."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from .pages import PAGES

ROOT = Path(__file__).resolve().parent.parent
# In README: `./scripts/run.sh ARGS   # finds BUG: CHECKER false`
EXAMPLE = re.compile(r"^(\./scripts/run\.sh [^#\n]*?)\s+# finds (\S+): (\S+) false$", re.M)


def bug_examples() -> list[tuple[str, str, str]]:
    """(command, bug, checker) for each bug example in README."""
    return [(command, bug, checker) for command, bug, checker in EXAMPLE.findall((ROOT / "README.md").read_text())]


def run_example(command: str, results: Path) -> subprocess.CompletedProcess:
    args = command.split()[1:] + ["--quiet", "--results", str(results)]
    return subprocess.run(
        [str(ROOT / "scripts" / "run.sh"), *args], cwd=ROOT, capture_output=True, text=True, timeout=600
    )


def test_readme_names_its_bug_examples():
    found = bug_examples()
    assert {bug for _, bug, _ in found} >= {"ack-before-commit", "stale-read"}, found
    for command, bug, _ in found:
        assert f"--bug {bug}" in command, command


@pytest.mark.slow
@pytest.mark.parametrize("command, bug, checker", bug_examples(), ids=[bug for _, bug, _ in bug_examples()])
def test_each_bug_example_finds_its_bug(tmp_path, command, bug, checker):
    done = run_example(command, tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr[-2000:]
    assert f"{checker}: False" in done.stdout, done.stdout


# `see Coverage below`, `"Nothing outlives its run" above`
POINTER = re.compile(r'(?:see |")([A-Z][\w ,`()-]*?)"? (above|below)')


def test_each_pointer_points_the_right_way_within_its_page():
    """A section named as "above" or "below" is there, in the same page, as
    a heading or a bullet's first words ("See 'Nothing outlives its run'
    below" pointed up). A section of another page is a link, which the
    documentation build checks."""
    found = []
    for page in PAGES:
        lines = page.read_text().splitlines()
        for number, line in enumerate(lines):
            for title, way in POINTER.findall(line):
                title = title.strip('"')
                starts = [i for i, text in enumerate(lines) if re.match(rf"(#+ |- ){re.escape(title)}\b", text)]
                found.append(title)
                assert any(i < number if way == "above" else i > number for i in starts), (page.name, number + 1, title)
    assert {"Where to go next", "Coverage", "Verdicts"} <= set(found), found


def test_the_docs_name_every_model_import_takes():
    """`import --model` took `workloads`, which README left out."""
    from checkers.models import MODELS

    text = " ".join((ROOT / "docs" / "commands.md").read_text().split())
    [listed] = re.findall(r"--model ([a-z|-]+) \[--initial", text)
    assert set(listed.split("|")) == set(MODELS)
