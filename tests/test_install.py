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


def test_the_projects_install_prints_no_banner(tmp_path):
    """The install printed setuptools' "Editable installation" warning banner
    (`!!` and a box of asterisks) on every fresh set-up: bootstrap.sh's line,
    run as written but into a virtualenv of its own, with no dependencies."""
    import subprocess
    import sys

    [line] = [
        line.strip()
        for line in (ROOT / "scripts" / "bootstrap.sh").read_text().splitlines()
        if "pip install" in line and " -e " in line
    ]
    subprocess.run([sys.executable, "-m", "venv", str(tmp_path / "venv")], check=True)
    # pip as bootstrap.sh leaves it (the one venv makes hides the build's output under --quiet).
    subprocess.run(
        [tmp_path / "venv" / "bin" / "python", "-m", "pip", "install", "--quiet", "--upgrade", "pip"], check=True
    )
    command = line.replace(".venv/bin/python", str(tmp_path / "venv" / "bin" / "python")) + " --no-deps"
    done = subprocess.run(["bash", "-c", command], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "!!" not in done.stderr and "Editable installation" not in done.stderr, done.stderr
