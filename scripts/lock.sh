#!/usr/bin/env bash
# Refreshes constraints.txt, the exact versions of every Python package
# splitbrain and its tests install (scripts/bootstrap.sh installs from it),
# resolved afresh from pyproject.toml's bounds by pip-tools' pip-compile.
# Run it to take newer versions on purpose; commit the file with the run of
# ./scripts/test.sh that passed on them.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
if ! .venv/bin/python -m piptools --version >/dev/null 2>&1; then
    .venv/bin/python -m pip install --quiet pip-tools
fi
# Each target's client packages (Target.python_packages) are locked with the rest
# (listed in a file of the virtualenv's, so constraints.txt names the same source each time).
clients=.venv/target-clients.in
.venv/bin/python -m targets.packages python > "$clients"
CUSTOM_COMPILE_COMMAND=scripts/lock.sh .venv/bin/python -m piptools compile --quiet --upgrade --extra dev --strip-extras --no-emit-index-url \
    --no-emit-find-links --output-file constraints.txt pyproject.toml "$clients"
echo "lock: constraints.txt written; scripts/bootstrap.sh installs from it"
