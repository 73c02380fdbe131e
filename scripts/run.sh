#!/usr/bin/env bash
# The main job: sets up what is missing, then runs a nemesis campaign against
# the reference quorum and prints its verdict. Extra arguments go to the campaign.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
exec .venv/bin/splitbrain simulate --nodes 3 --schedules 200 "$@"
