#!/usr/bin/env bash
# Sets up what is missing, then runs every test suite (the slow ones too).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
scripts/build-image.sh
scripts/ensure-chromium.sh
# Two workers: most suites wait on real clusters' clocks, not the CPU. A
# module's tests stay on one worker (--dist loadscope), so a module-scoped
# campaign (the detection matrix) runs once.
exec .venv/bin/python -m pytest -n 2 --dist loadscope "$@"
