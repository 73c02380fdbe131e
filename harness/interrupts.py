"""How the harness stops when asked: Ctrl-C, SIGTERM (what `timeout`, `kill`,
CI cancellation and `docker stop` send) and SIGHUP (a closed terminal) all
raise KeyboardInterrupt, so every exit path heals and tears down. While a run
heals and collects it is shielded: the signals wait until that is done. Once
one has stopped the command, more of them (a second Ctrl-C, `kill` twice)
only say so: they neither cut the clean-up short nor kill the interpreter as
it exits (`quiet_exit`), so the exit code stays 2.

A command started in the background by a script inherits SIGINT ignored
(the shell's rule for `&`); SIGTERM must still stop it, so the handlers do
not go through SIGINT's.

While a run's event loop runs, the same signals cancel its work at its next
`await` instead (`cancelled_on_termination`), and KeyboardInterrupt is
raised once that has unwound. Raised wherever the interpreter happened to
be, it could land inside the event loop's own machinery and leave a task
that is never woken; and a signal the kernel gives another thread (the
load's pool, an allocator's) only reaches the loop through a wakeup file
descriptor, which the loop's own handlers set: without it the loop slept on
with nothing scheduled, and the run never ended.

On the way out every task is cancelled and its end retrieved (`ended`):
asyncio prints a traceback to stderr for a future whose exception nobody
read ("exception was never retrieved", a gather whose children were
cancelled) and a warning for a task destroyed while pending. A loop of ours
hands what would still reach it to `heard`: one line of ours, its detail in
a crash file.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import traceback
from collections.abc import Awaitable, Iterable
from typing import TypeVar

from harness import crash

T = TypeVar("T")

_shield = {"depth": 0, "pending": False, "stopping": False}
TERMINATION = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)


def _stops() -> bool:
    """Whether a signal that came now stops the command (else it is said, or waits for the shield)."""
    if _shield["stopping"]:
        # os.write, not print: the handler may run in the middle of a print to stderr.
        os.write(2, b"splitbrain: already stopping: healing and tearing down\n")
        return False
    if _shield["depth"]:
        _shield["pending"] = True
        return False
    _shield["stopping"] = True
    return True


def _interrupt(signum, frame) -> None:
    if _stops():
        raise KeyboardInterrupt


def interrupt_on_termination() -> None:
    """SIGTERM and SIGHUP as Ctrl-C (and Ctrl-C as itself, where it was not
    ignored by whoever started us)."""
    _shield["stopping"] = False
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _interrupt)
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        signal.signal(signal.SIGINT, _interrupt)


def quiet_exit(code: int) -> None:
    """Exit with `code`, deaf to the signals above: the interpreter puts
    their default handlers back as it shuts down, and one arriving then
    would end the process with its own status (143 for SIGTERM), not `code`."""
    for sig in TERMINATION:
        signal.signal(sig, signal.SIG_IGN)
    sys.exit(code)


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
            _shield["stopping"] = True
    if pending:
        raise KeyboardInterrupt


async def ended(futures: Iterable[asyncio.Future]) -> None:
    """Cancel `futures` and wait for each to end, retrieving what it ended
    with: nothing of theirs is left for asyncio to report at exit."""
    futures = list(futures)
    for future in futures:
        future.cancel()
    await asyncio.gather(*futures, return_exceptions=True)


def heard(loop: asyncio.AbstractEventLoop, context: dict) -> None:
    """The loop's exception handler: what asyncio would print to stderr
    (a traceback, "Task was destroyed but it is pending!") as one line of
    ours, the detail in a crash file; a bug of ours either way."""
    error = context.get("exception")
    detail = "".join(traceback.format_exception(error)) if error is not None else ""
    where = crash.written(f"{context.get('message')}\n{context!r}\n\n{detail}")
    os.write(2, f"splitbrain: internal error: {context.get('message')} (details in {where})\n".encode())


async def cancelled_on_termination(work: Awaitable[T]) -> T:
    """`work`, cancelled at its next `await` by the signals that stop the
    command (those whose handler is ours), then KeyboardInterrupt; our
    handlers back once it ends. Must be the task `asyncio.run` runs."""
    loop = asyncio.get_running_loop()
    loop.set_exception_handler(heard)
    task = asyncio.current_task()
    assert task is not None
    ours = [sig for sig in TERMINATION if signal.getsignal(sig) is _interrupt]
    stopped = []

    def stop() -> None:
        if _stops():
            stopped.append(True)
            task.cancel()

    for sig in ours:
        loop.add_signal_handler(sig, stop)
    try:
        done = await work
    except asyncio.CancelledError:
        if stopped:
            raise KeyboardInterrupt from None
        raise
    finally:
        for sig in ours:
            loop.remove_signal_handler(sig)
            signal.signal(sig, _interrupt)
    if stopped:  # it came as the work ended, with no `await` left to cancel
        raise KeyboardInterrupt
    return done
