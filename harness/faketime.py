"""A node's clock that the harness can move (`--nemesis clock`), through
libfaketime (Debian's `libfaketime`): the node runs with the library
preloaded and reads its offset from a control file on every clock call
(`FAKETIME_NO_CACHE`), so a rewrite of the file moves the clock at once,
the monotonic clock included (what timers and leases are measured on).

libfaketime replaces libc's clock functions. Programs that read the clock
without libc, as Go programs do through the vDSO (etcd among them), do not
see it: targets declare whether they can take clock faults
(`Capabilities.clock_faults`).
"""

from __future__ import annotations

import os
import sysconfig
from pathlib import Path

# The thread-safe build: a node may read the clock from more than one thread.
LIBRARY = (
    Path("/usr/lib") / (sysconfig.get_config_var("MULTIARCH") or "x86_64-linux-gnu") / "faketime" / "libfaketimeMT.so.1"
)


def environment(control: str) -> dict[str, str]:
    """The variables that put a process's clock under `control` (a path as the process sees it)."""
    return {"LD_PRELOAD": str(LIBRARY), "FAKETIME_TIMESTAMP_FILE": control, "FAKETIME_NO_CACHE": "1"}


def set_offset(control: Path, offset_ms: int) -> None:
    """Move the clock to `offset_ms` from true time. The file is replaced
    whole, so the node never reads half an offset."""
    sign = "-" if offset_ms < 0 else "+"
    text = f"{sign}{abs(offset_ms) // 1000}.{abs(offset_ms) % 1000:03d}\n"
    partial = control.with_name(control.name + ".new")
    partial.write_text(text)
    os.replace(partial, control)
