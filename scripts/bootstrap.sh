#!/usr/bin/env bash
# Installs what splitbrain needs into .venv (the Python packages at the
# versions constraints.txt pins), builds the compiled
# linearizability search (checkers/wgl_core, Rust through PyO3 and maturin),
# and installs etcd-server, fuse3, libfaketime and a Java runtime (for Spark) from Debian's
# packages when they are missing; safe to re-run (does nothing when their
# sources have not changed since the last install).
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    "$python" -m venv .venv
fi
stamp=.venv/.splitbrain-installed
want=$(cat pyproject.toml constraints.txt | sha256sum | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    .venv/bin/python -m pip install --quiet --upgrade pip
    # The versions the tests passed on (constraints.txt; scripts/lock.sh refreshes it).
    .venv/bin/python -m pip install --quiet -c constraints.txt -e '.[dev]'
    echo "$want" > "$stamp"
fi
# Java for Spark (splitbrain analyze), from Debian's packages where missing.
if ! command -v java >/dev/null 2>&1; then
    echo "bootstrap: installing a Java runtime (default-jre-headless) for Spark" >&2
    scripts/apt-install.sh default-jre-headless
fi
# libfuse3 and fusermount3, for the lose-unfsynced nemesis's filesystem (harness/lazyfs.py).
if ! command -v fusermount3 >/dev/null 2>&1; then
    echo "bootstrap: installing fuse3 from Debian's packages" >&2
    scripts/apt-install.sh fuse3
fi
# libfaketime, for the clock nemesis on the local backend (harness/faketime.py).
if ! ls /usr/lib/*/faketime/libfaketimeMT.so.1 >/dev/null 2>&1; then
    echo "bootstrap: installing libfaketime from Debian's packages" >&2
    scripts/apt-install.sh libfaketime
fi
# etcd 3.4 from Debian's packages, for the etcd target on the local backend.
if ! command -v etcd >/dev/null 2>&1; then
    echo "bootstrap: installing etcd-server from Debian's packages" >&2
    scripts/apt-install.sh etcd-server
fi
core_stamp=.venv/.splitbrain-wgl-installed
core_want=$(cat checkers/wgl_core/Cargo.toml checkers/wgl_core/pyproject.toml checkers/wgl_core/src/*.rs | sha256sum | cut -d' ' -f1)
if [ ! -f "$core_stamp" ] || [ "$(cat "$core_stamp")" != "$core_want" ]; then
    if ! command -v cargo >/dev/null; then
        echo "bootstrap: cargo (Rust) is needed to build checkers/wgl_core" >&2
        exit 2
    fi
    echo "bootstrap: building the compiled linearizability search (checkers/wgl_core)" >&2
    .venv/bin/python -m pip install --quiet ./checkers/wgl_core
    echo "$core_want" > "$core_stamp"
fi
