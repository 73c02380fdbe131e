"""A soak (`splitbrain soak`): one cluster under load and guided faults for
hours, judged live (harness/live.py), with its progress where people look.
Every `sample_s`, a sample of how it goes is appended to `soak.jsonl` in
the run directory and `soak.html` is written again (results/soak_page.py),
so the page can be browsed while the soak runs; every minute, a line on
the terminal. A sample holds the operations answered and the faults made
so far, the violations found live, and the memory of the harness and of
each node the backend runs as a process here: a leak shows as a curve that
climbs while the load is level.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from results.recording import PARTIAL
from results.soak_page import SOAK_PAGE, write_soak_page

SAMPLES_FILE = "soak.jsonl"
SAY_EVERY_S = 60.0
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")


def resident_mib(pid: int | str = "self") -> float | None:
    """A process's resident memory in MiB (Linux), or None when it is gone."""
    try:
        with open(f"/proc/{pid}/statm") as statm:
            return round(int(statm.read().split()[1]) * PAGE_SIZE / 2**20, 1)
    except (OSError, IndexError, ValueError):
        return None


class Soak:
    """Samples a run's progress (the `recorder`'s tally, what `live` found,
    the processes' memory) into the run directory."""

    def __init__(
        self,
        run_dir: Path,
        recorder: Any,
        live: Any,
        pids: Callable[[], dict[str, int]],
        settings: dict,
        sample_s: float,
    ) -> None:
        self.run_dir, self.recorder, self.live, self.pids = run_dir, recorder, live, pids
        self.settings, self.sample_s = settings, sample_s
        self.samples: list[dict[str, Any]] = []
        self.began = time.monotonic()
        self.said = self.began

    def sample(self) -> dict[str, Any]:
        """How the soak goes now, appended to soak.jsonl."""
        tally = dict(self.recorder.tally)
        previous = self.samples[-1] if self.samples else {"elapsed_s": 0.0, "operations": 0}
        elapsed_s = round(time.monotonic() - self.began, 1)
        sample = {
            "elapsed_s": elapsed_s,
            "operations": tally["operations"],
            "ok": tally["ok"],
            "rate": round(
                (tally["operations"] - previous["operations"]) / max(elapsed_s - previous["elapsed_s"], 1e-9)
            ),
            "faults": tally["faults"],
            "violations": sorted(self.live.found),
            "harness_mib": resident_mib(),
            "nodes_mib": {node: resident_mib(pid) for node, pid in sorted(self.pids().items())},
        }
        self.samples.append(sample)
        with open(self.run_dir / SAMPLES_FILE, "a", encoding="utf-8") as samples:
            samples.write(json.dumps(sample) + "\n")
        return sample

    def write_page(self, ended: dict[str, Any] | None = None) -> None:
        write_soak_page(self.run_dir, self.settings, self.samples, self.live.found, ended)

    async def sampling(self) -> None:
        """Until cancelled: a sample and the page every `sample_s`, a line every minute."""
        ended = self.run_dir.with_name(self.run_dir.name.removesuffix(PARTIAL)) / SOAK_PAGE
        print(
            f"splitbrain: soak: how it goes, while it runs: {self.run_dir / SOAK_PAGE}; once it ends: {ended}",
            file=sys.stderr,
        )
        while True:
            await asyncio.sleep(self.sample_s)
            sample = await asyncio.to_thread(self.sample)
            await asyncio.to_thread(self.write_page)
            if time.monotonic() - self.said >= SAY_EVERY_S:
                self.said = time.monotonic()
                print(f"splitbrain: soak: {line(sample, self.settings['time_limit_s'])}", file=sys.stderr)

    def ended(self) -> None:
        """The last sample, once load has ended (and the live verdict said), and the page without its refresh."""
        self.sample()
        self.write_page({"live_verdict": self.live.verdict})


def line(sample: dict[str, Any], total_s: float) -> str:
    """One line of a sample, for the terminal."""
    memory = ", ".join(
        [f"harness {sample['harness_mib']:.0f} MiB"]
        + [f"{node} {mib:.0f} MiB" for node, mib in sample["nodes_mib"].items() if mib is not None]
    )
    found = ", ".join(sample["violations"]) or "none"
    return (
        f"{sample['elapsed_s'] / 60:.1f} of {total_s / 60:.1f} min; {sample['operations']:,} operations "
        f"({sample['rate']:,}/s now); {sample['faults']:,} faults; violations found: {found}; memory: {memory}"
    )
