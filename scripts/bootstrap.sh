#!/usr/bin/env bash
# Installs what splitbrain needs into .venv (the Python packages at the
# versions constraints.txt pins, and each target's client packages,
# Target.python_packages), builds the compiled
# linearizability search (checkers/wgl_core, Rust through PyO3 and maturin),
# and installs fuse3, libfaketime, a Java runtime (for Spark) and each
# target's Debian packages (Target.image_packages: etcd-server, ...) when
# they are missing; safe to re-run (does nothing when their sources have not
# changed since the last install).
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    "$python" -m venv .venv
fi
stamp=.venv/.splitbrain-installed
want=$(cat pyproject.toml constraints.txt targets/*/target.py | sha256sum | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    .venv/bin/python -m pip install --quiet --upgrade pip
    # The versions the tests passed on (constraints.txt; scripts/lock.sh refreshes it).
    # setuptools warns, in a banner, of folders named as the packages in the
    # working directory on every editable install: they are those packages.
    PYTHONWARNINGS="ignore:Editable installation" .venv/bin/python -m pip install --quiet -c constraints.txt -e '.[dev]'
    mapfile -t clients < <(.venv/bin/python -m targets.packages python)
    if [ "${#clients[@]}" -gt 0 ]; then
        .venv/bin/python -m pip install --quiet -c constraints.txt "${clients[@]}"
    fi
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
# Each target's Debian packages (etcd-server, ...), for its nodes on the local backend.
missing=()
for package in $(.venv/bin/python -m targets.packages debian); do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "ok installed" || missing+=("$package")
done
if [ "${#missing[@]}" -gt 0 ]; then
    echo "bootstrap: installing ${missing[*]} from Debian's packages" >&2
    scripts/apt-install.sh "${missing[@]}"
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
