"""The machine's true time for event stamps, even when the node's own clock
is moved by libfaketime (`--nemesis clock`, preloaded into the node). Events
are the harness's view of the node: their stamps must stay on the same
clock as the client history's, or a moved clock would reorder the timeline.
libfaketime replaces libc's clock functions, so under it the stamp comes
from the clock_gettime system call itself; elsewhere from `time.time_ns`.
"""

from __future__ import annotations

import ctypes
import os
import platform
import time

CLOCK_REALTIME = 0
# The clock_gettime system call's number, per architecture.
SYSCALLS = {"x86_64": 228, "aarch64": 113}


class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


def _syscall_time_ns() -> int:
    spec = _Timespec()
    assert _libc is not None  # only called under faketime, where it was loaded
    if _libc.syscall(SYSCALLS[platform.machine()], CLOCK_REALTIME, ctypes.byref(spec)) != 0:
        raise OSError(ctypes.get_errno(), "clock_gettime")
    return spec.tv_sec * 1_000_000_000 + spec.tv_nsec


_under_faketime = "faketime" in os.environ.get("LD_PRELOAD", "") and platform.machine() in SYSCALLS
_libc = ctypes.CDLL(None, use_errno=True) if _under_faketime else None
true_time_ns = _syscall_time_ns if _under_faketime else time.time_ns
