"""The node image: a debootstrapped Debian root filesystem, imported into
Docker under a tag that changes with its package list (so a changed list
builds a new image). The image holds no SSH host keys: each container that
runs sshd makes its own. `scripts/build-image.sh` builds it; `ensure_image` runs
that script when the image is missing."""

from __future__ import annotations

import hashlib
import re
import subprocess
from pathlib import Path

from history.errors import ClusterError
from targets import packages

# What every node container needs (the link proxy server, iptables cuts, sshd
# for the SSH backend's tests), then what each registered target needs.
BASE_PACKAGES = ("python3", "iproute2", "iptables", "procps", "openssh-server", "libfaketime")
PACKAGES = BASE_PACKAGES + tuple(p for p in packages.listed("debian") if p not in BASE_PACKAGES)
# Bump when scripts/build-image.sh changes what goes into the image.
RECIPE = 2
IMAGE = "splitbrain-node:bookworm-" + hashlib.sha256(f"{RECIPE}:{','.join(PACKAGES)}".encode()).hexdigest()[:8]
ROOT = Path(__file__).resolve().parent.parent
SOURCES = (Path("/etc/apt/sources.list.d"), Path("/etc/apt/sources.list"))


def apt_mirror() -> str:
    """The first Debian archive URI this machine's apt is configured with."""
    texts = []
    for source in SOURCES:
        files = sorted(source.glob("*.sources")) + sorted(source.glob("*.list")) if source.is_dir() else [source]
        texts += [f.read_text(errors="replace") for f in files if f.is_file()]
    for text in texts:
        for stanza in re.split(r"\n\s*\n", text):
            uris = re.search(r"^URIs:\s*(\S+)", stanza, re.M)
            suites = re.search(r"^Suites:\s*(.+)$", stanza, re.M)
            if uris and suites and "bookworm" in suites.group(1).split() and not uris.group(1).endswith("-security"):
                return uris.group(1)
        for line in text.splitlines():
            match = re.match(r"^deb\s+(?:\[[^\]]*\]\s+)?(\S+)\s+bookworm\s", line)
            if match:
                return match.group(1)
    raise ClusterError("no Debian bookworm archive in /etc/apt/sources.list(.d): cannot debootstrap the node image")


def ensure_image() -> str:
    """The node image's tag, building it first if Docker does not have it."""
    result = subprocess.run([str(ROOT / "scripts" / "build-image.sh")], capture_output=True, text=True)
    if result.returncode != 0:
        raise ClusterError(f"building the node image failed: {result.stderr.strip().splitlines()[-1:]}")
    return IMAGE
