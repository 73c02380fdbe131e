#!/usr/bin/env bash
# Builds the node image (no registry here): debootstrap a minimal Debian root
# filesystem from this machine's configured apt mirror and `docker import` it.
# Does nothing when the image already exists; safe to re-run.
set -euo pipefail
cd "$(dirname "$0")/.."
# The recipe's modules need only the standard library: the system's Python
# reads them while bootstrap.sh is still making .venv (test.sh runs both at once).
python=python3
[ -x .venv/bin/python ] && python=.venv/bin/python
tag=$("$python" -c 'from harness.docker_image import IMAGE; print(IMAGE)')
if docker image inspect "$tag" >/dev/null 2>&1; then
    exit 0
fi
if ! command -v debootstrap >/dev/null 2>&1; then
    scripts/apt-install.sh debootstrap
fi
mirror=$("$python" -c 'from harness.docker_image import apt_mirror; print(apt_mirror())')
packages=$("$python" -c 'from harness.docker_image import PACKAGES; print(",".join(PACKAGES))')
root=$(mktemp -d /tmp/splitbrain-rootfs.XXXXXX)
trap 'rm -rf "$root"' EXIT
echo "build-image: debootstrap bookworm from $mirror into $root" >&2
debootstrap --variant=minbase --include="$packages" bookworm "$root" "$mirror" >"$root.log" 2>&1 \
    || { tail -20 "$root.log" >&2; exit 2; }
rm -f "$root.log"
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
# Host keys made at install time would be shared by every container.
rm -f "$root"/etc/ssh/ssh_host_*
tar -C "$root" -c . | docker import --change 'CMD ["/bin/bash"]' - "$tag" >/dev/null
echo "build-image: built $tag" >&2
# Older recipes of the image are of no further use.
docker images splitbrain-node --format '{{.Repository}}:{{.Tag}}' | { grep -vx "$tag" || true; } | xargs -r docker rmi >/dev/null
