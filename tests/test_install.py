"""Reproducible installs: set-up installs the Python packages at the versions
constraints.txt pins (scripts/lock.sh refreshes it with pip-tools), so a
machine next year runs what the tests passed on, not whatever is newest."""

from __future__ import annotations

import re
import tomllib
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PIN = re.compile(r"^([A-Za-z0-9_.-]+)==(\S+)$", re.M)


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pins() -> dict[str, str]:
    return {canonical(name): pinned for name, pinned in PIN.findall((ROOT / "constraints.txt").read_text())}


def test_every_dependency_is_pinned():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = [*project["dependencies"], *project["optional-dependencies"]["dev"]]
    names = {canonical(re.split(r"[<>=!~\[; ]", spec, maxsplit=1)[0]) for spec in wanted}
    assert names - set(pins()) == set()


def test_set_up_installed_the_pinned_versions():
    installed = {}
    for name in pins():
        try:
            installed[name] = version(name)
        except PackageNotFoundError:
            installed[name] = None
    assert installed == pins()
