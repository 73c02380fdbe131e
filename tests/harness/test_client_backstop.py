"""A target's client that never returns does not hold the run past its end:
the harness gives up on a call after a few operation timeouts (the
operation then indeterminate, the client dropped), and on a close that
never completes. A guided NATS run once stayed in its load loop after its
last fault for minutes, deaf to Ctrl-C, with no bytes waiting on its sockets."""

from __future__ import annotations

import asyncio
import time

from harness.run import Run, RunConfig
from results.recording import HistoryRecorder
from targets.interface import TargetClient
from workloads.generators import Operation


class NeverAnswers(TargetClient):
    async def invoke(self, f: str, key: str | None, value: object, timeout_s: float) -> dict:
        await asyncio.Event().wait()
        return {}

    async def close(self) -> None:
        await asyncio.Event().wait()


def test_a_client_that_never_answers_is_given_up_on(tmp_path):
    run = Run.__new__(Run)  # only what invoking an operation reads
    run.config, run.recorder = RunConfig(op_timeout_s=0.1), HistoryRecorder(tmp_path)
    clients = {"n1": NeverAnswers()}
    started = time.monotonic()
    done = asyncio.run(run.invoke(0, Operation("read", "k0", None), "n1", clients))
    assert done["type"] == "info" and clients == {}
    # Given up on at the backstop, then its close at the backstop again.
    assert time.monotonic() - started < 2 * run.backstop_s() + 1
