#!/usr/bin/env bash
# Sets up what is missing, then runs every test suite (the slow ones too).
set -euo pipefail
cd "$(dirname "$0")/.."
# The node image's debootstrap (a minute on a new machine) runs while the
# Python packages and the Rust search are installed and built.
scripts/build-image.sh &
image=$!
scripts/bootstrap.sh
scripts/ensure-chromium.sh
wait "$image" || { echo "test.sh: the node image was not built (scripts/build-image.sh)" >&2; exit 2; }
# Format, lint and types first (scripts/check): a type error fails CI as a test does.
scripts/check
# Three workers on two cores: most suites wait on real clusters' clocks, not
# the CPU (two workers kept one core busy on average, 24 min in all). A
# module's tests stay on one worker (--dist loadscope), so a module-scoped
# campaign (the detection matrix) runs once.
exec .venv/bin/python -m pytest -n 3 --dist loadscope "$@"
