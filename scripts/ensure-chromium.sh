#!/usr/bin/env bash
# Installs Chromium from Debian's packages if it is missing: the report tests
# open report.html in a real headless browser. Safe to re-run.
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then
    exit 0
fi
echo "ensure-chromium: installing chromium (Debian package)" >&2
"$(dirname "$0")"/apt-install.sh --no-install-recommends chromium fonts-dejavu-core
