"""Signals as the harness takes them: SIGTERM stops it even where a script's
`&` left Ctrl-C ignored, and nothing interrupts a shielded block (healing);
what came in meanwhile is raised once it ends."""

from __future__ import annotations

import os
import signal

import pytest

from harness.interrupts import interrupt_on_termination, shielded


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
