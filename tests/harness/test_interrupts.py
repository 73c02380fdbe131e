"""Signals as the harness takes them: SIGTERM stops it even where a script's
`&` left Ctrl-C ignored, and nothing interrupts a shielded block (healing);
what came in meanwhile is raised once it ends."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from harness.interrupts import interrupt_on_termination, shielded

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def handlers():
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    yield
    for sig, handler in saved.items():
        signal.signal(sig, handler)


def test_sigterm_interrupts_even_with_ctrl_c_ignored(handlers):
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    interrupt_on_termination()
    assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    with pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), signal.SIGTERM)


def test_a_shielded_block_finishes_then_the_interrupt_comes(handlers):
    interrupt_on_termination()
    done = []
    with pytest.raises(KeyboardInterrupt):
        with shielded():
            os.kill(os.getpid(), signal.SIGINT)
            os.kill(os.getpid(), signal.SIGHUP)
            done.append("healed")
    assert done == ["healed"]
    with shielded():  # the interrupt was taken: the next block is not cut short by it
        done.append("again")
    assert done == ["healed", "again"]


def test_a_signal_another_thread_takes_stops_an_event_loop_with_nothing_scheduled(tmp_path):
    """The kernel may give a process's SIGTERM to any of its threads. One
    given to a thread busy in C (as the load's pool's or an allocator's may
    be), while the run's event loop waits with nothing scheduled, must still
    stop the run: before, the loop slept on and the run never ended."""
    script = tmp_path / "waits.py"
    script.write_text(
        "import asyncio, signal, sys, threading, time\n"
        "from harness.interrupts import cancelled_on_termination, interrupt_on_termination\n"
        "interrupt_on_termination()\n"
        "async def waits():\n"
        "    sleeper = threading.Thread(target=time.sleep, args=(30,), daemon=True)\n"
        "    sleeper.start()\n"
        "    threading.Timer(0.5, signal.pthread_kill, (sleeper.ident, signal.SIGTERM)).start()\n"
        "    await asyncio.Event().wait()\n"
        "try:\n"
        "    asyncio.run(cancelled_on_termination(waits()))\n"
        "except KeyboardInterrupt:\n"
        "    sys.exit(7)\n"
    )
    try:
        done = subprocess.run([sys.executable, str(script)], cwd=ROOT, capture_output=True, text=True, timeout=15)
    except subprocess.TimeoutExpired:
        pytest.fail("the signal never stopped the event loop")
    assert done.returncode == 7, done.stderr
