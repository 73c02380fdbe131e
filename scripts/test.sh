#!/usr/bin/env bash
# Sets up what is missing, then runs every test suite (the slow ones too).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
scripts/build-image.sh
scripts/ensure-chromium.sh
exec .venv/bin/python -m pytest "$@"
