"""Where a crash's traceback goes: a file of its own in the folder the
command was writing in (a run directory, a cluster's state directory, an
analysis folder), else in the user's state home ($XDG_STATE_HOME/splitbrain,
by default ~/.local/state/splitbrain); never the system's temporary folder,
where nobody looks for it and nothing removes it."""

from __future__ import annotations

import os
import sys
import tempfile
import traceback
from pathlib import Path

from results.recording import PARTIAL

_folder: list[Path] = []


def write_here(folder: Path) -> None:
    """A crash from here on leaves its traceback in `folder` (where it exists by then)."""
    _folder[:] = [Path(folder)]


def state_home() -> Path:
    return Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state") / "splitbrain"


def log(folder: Path | None = None) -> Path:
    """The traceback of the exception being handled, written to a file in
    `folder`, else the folder named by `write_here` (a run directory under
    its final name too, once its verdict gave it one), else the state home."""
    return written(traceback.format_exc(), folder)


def written(text: str, folder: Path | None = None) -> Path:
    """`text` (a traceback) in a crash file of its own, where `log` puts one."""
    named = [folder] if folder else [*_folder, *(Path(str(f).removesuffix(PARTIAL)) for f in _folder)]
    for where in [f for f in named if f.is_dir()] + [state_home()]:
        try:
            where.mkdir(parents=True, exist_ok=True)
            handle, name = tempfile.mkstemp(prefix="splitbrain-crash-", suffix=".log", dir=where)
        except OSError:
            continue
        with os.fdopen(handle, "w") as file:
            file.write(f"splitbrain {' '.join(sys.argv[1:])}\n\n{text}")
        return Path(name)
    return state_home()
