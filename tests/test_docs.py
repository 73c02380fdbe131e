"""The documentation holds together: the pages build with MkDocs with every
warning an error (a broken link or anchor, a page left out of the
navigation), the command reference is what the parsers say, the anomaly
kinds' page is what the checkers' registry says, README stays
a page a newcomer reads in ten minutes and links only to what exists, every
command line the pages show is one the command takes, and nothing cites a
folder outside the repository."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from .pages import ROOT, shown_commands

README_LINES = 400


def test_the_pages_build_with_warnings_as_errors(tmp_path):
    done = subprocess.run(
        [str(Path(sys.executable).parent / "mkdocs"), "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "site" / "reference" / "index.html").is_file()


def test_the_command_reference_is_what_the_parsers_say():
    done = subprocess.run(
        [sys.executable, "-m", "harness.cli.reference"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "COLUMNS": "40"},  # the page's width is its own, whatever the terminal's
    )
    assert done.returncode == 0, done.stderr
    assert (ROOT / "docs" / "reference.md").read_text() == done.stdout, (
        "docs/reference.md is stale: python -m harness.cli.reference > docs/reference.md"
    )


def test_the_anomaly_page_is_what_the_registry_says():
    done = subprocess.run(
        [sys.executable, "-m", "checkers.registry"], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert (ROOT / "docs" / "anomalies.md").read_text() == done.stdout, (
        "docs/anomalies.md is stale: python -m checkers.registry > docs/anomalies.md"
    )


def test_readme_is_short_and_links_only_to_what_exists():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= README_LINES
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    assert "docs/index.md" in links
    assert [link for link in links if "://" not in link and not (ROOT / link).exists()] == []


def test_nothing_cites_a_folder_outside_the_repository():
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    citing = [
        name
        for name in tracked.split()
        if name.endswith((".py", ".md", ".toml", ".sh", ".yml"))
        and name != "tests/test_docs.py"
        and "../shared" in (ROOT / name).read_text(errors="replace")
    ]
    assert citing == []


@pytest.mark.parametrize("page, line", shown_commands())
def test_each_command_the_pages_show_is_one_the_command_takes(page, line):
    """`splitbrain ...` and `./scripts/run.sh ...` lines parse as the
    command line parses them; a script or benchmark named is there."""
    from harness.cli import build_parser

    try:
        words = shlex.split(line, comments=True)
    except ValueError:  # the first line of a quoted program that goes on below
        assert line.startswith(".venv/bin/python -c"), (page, line)
        return
    if words[0] in (".venv/bin/splitbrain", "./scripts/run.sh"):
        args = words[1:] if words[0] == ".venv/bin/splitbrain" else ["run", *words[1:]]
        try:
            build_parser().parse_args(args)
        except SystemExit as error:
            raise AssertionError(f"{page}: {line}") from error
    elif words[0] == ".venv/bin/python" and words[1] != "-c":
        assert (ROOT / words[1]).is_file(), (page, line)
    elif words[0].startswith(("./scripts/", "scripts/")):
        assert (ROOT / words[0]).is_file(), (page, line)
