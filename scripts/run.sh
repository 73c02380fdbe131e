#!/usr/bin/env bash
# The main job: sets up what is missing, then runs a nemesis campaign against a
# local 3-node cluster of the reference quorum and prints its verdict.
# Extra arguments go to `splitbrain run` (e.g. --bug ack-before-commit, --nodes 5).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
exec .venv/bin/splitbrain run --backend local --nodes 3 --time-limit 30 "$@"
