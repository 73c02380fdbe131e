"""How the harness stops when asked: Ctrl-C, SIGTERM (what `timeout`, `kill`,
CI cancellation and `docker stop` send) and SIGHUP (a closed terminal) all
raise KeyboardInterrupt, so every exit path heals and tears down. While a run
heals and collects it is shielded: the signals wait until that is done.

A command started in the background by a script inherits SIGINT ignored
(the shell's rule for `&`); SIGTERM must still stop it, so the handlers do
not go through SIGINT's.
"""

from __future__ import annotations

import contextlib
import signal

_shield = {"depth": 0, "pending": False}


def _interrupt(signum, frame) -> None:
    if _shield["depth"]:
        _shield["pending"] = True
        return
    raise KeyboardInterrupt


def interrupt_on_termination() -> None:
    """SIGTERM and SIGHUP as Ctrl-C (and Ctrl-C as itself, where it was not
    ignored by whoever started us)."""
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _interrupt)
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        signal.signal(signal.SIGINT, _interrupt)


@contextlib.contextmanager
def shielded():
    """No interruption inside (healing, collecting); one that came in the
    meantime is raised at the end, unless the block raised already."""
    _shield["depth"] += 1
    try:
        yield
    finally:
        _shield["depth"] -= 1
        pending = _shield["pending"] and not _shield["depth"]
        if pending:
            _shield["pending"] = False
    if pending:
        raise KeyboardInterrupt
