#!/usr/bin/env bash
# Installs Debian packages, one of the set-up scripts' installs at a time:
# test.sh builds the node image while bootstrap.sh installs, and apt takes
# one caller at a time (a lock of our own, so a second waits instead of
# failing on dpkg's).
#   scripts/apt-install.sh [--no-install-recommends] PACKAGE...
set -euo pipefail
exec 9>/tmp/splitbrain-apt.lock
flock 9
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
