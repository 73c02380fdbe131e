"""Verdicts while a run goes (`run --check-live`; `--stop-on-violation`).

Every LIVE_INTERVAL_S, what the run has recorded so far (its history and
the events its probes saw) is judged, on a thread beside the load, by the
checkers whose violation in a run's first part is one of the whole run
(checkers/verdict.py's `SO_FAR`). The events are the probes' and, where this
machine can read them as they are written, the nodes' own logs'. The first
violation each finds is said at once, with when it was found. With `stop_on_violation` the load
ends there: its faults are healed and the cluster settles as after any
load, so a campaign spends no more time on a run whose answer is known.
When load ends, one last look at all of it gives the live verdict within
moments; then the batch checkers decide the run as ever. They are the
reference: what is found live is in their verdict too, as they read the
same rows and more (the nodes' own logs, the final copies).

`live.json` in the run directory keeps what was found, when, and the last
look's answers.
"""

from __future__ import annotations

import asyncio
import json
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from checkers.schema import EVENTS_COLUMNS, HISTORY_COLUMNS, frame
from checkers.verdict import check_prefix

LIVE_INTERVAL_S = 1.0
LIVE_FILE = "live.json"
# A look that cannot decide within this many seconds answers unknown: the next one tries again.
LIVE_BUDGET_S = 5.0


class Live:
    """The run's rows so far (`recorder.kept`, the `events` list the probes
    fill, and what `logged` reads of the nodes' logs now), judged on demand;
    `found` holds each checker's first violation."""

    def __init__(
        self,
        recorder: Any,
        events: list[dict],
        logged: Callable[[], list[dict]],
        capabilities: dict | None,
        stop: bool,
    ) -> None:
        self.recorder = recorder
        self.events = events
        self.logged = logged
        self.capabilities = capabilities
        self.stop = stop
        # The history so far as a table, and how many of the recorder's rows it holds: each look
        # makes a table of the rows recorded since the last one only (a table of all of them was
        # 4.6 s of a look's 4.9 s at 1.7M rows, and grew with the run).
        self.table = frame([], HISTORY_COLUMNS)
        self.tabled = 0
        self.tabling = threading.Lock()
        self.found: dict[str, dict[str, Any]] = {}
        self.looks = 0
        self.last: dict[str, Any] = {}
        # Why a checker could not decide at the last look (its time budget, a bug of ours).
        self.undecided: dict[str, str] = {}

    def history(self) -> pd.DataFrame:
        """The history recorded so far, as a table: the last look's, and the rows since."""
        with self.tabling:  # the last look (`ended`) may run while a watcher's look is still going
            kept = self.recorder.kept
            upto = len(kept)
            if upto > self.tabled:
                new = frame(kept[self.tabled : upto], HISTORY_COLUMNS)
                self.table = pd.concat([self.table, new], ignore_index=True)
                self.tabled = upto
            return self.table

    def look(self) -> list[str]:
        """Judge everything recorded so far; the checkers newly found violated."""
        events = list(self.events) + self.logged()
        began = time.monotonic()
        history = self.history()
        rows = len(history)
        # In time order, as the run directory's events table is written (checkers rely on it).
        ordered = frame(events, EVENTS_COLUMNS).sort_values("time_ns", kind="stable").reset_index(drop=True)
        results = check_prefix(history, ordered, LIVE_BUDGET_S, self.capabilities)
        took_s = time.monotonic() - began
        self.looks += 1
        self.last = {"rows": rows, "events": len(events), "took_s": round(took_s, 3)} | {
            name: result["valid"] for name, result in results.items()
        }
        self.undecided = {name: result["error"] for name, result in results.items() if result.get("error")}
        new = [name for name, result in results.items() if result["valid"] is False and name not in self.found]
        for name in new:
            self.found[name] = {
                "found_at_s": round(self.recorder.now_ns() / 1e9, 3),
                "rows": rows,
                "first": results[name]["anomalies"][:1],
            }
            print(f"splitbrain: live: {name}: {describe(self.found[name])}", file=sys.stderr)
        return new

    async def watch(self) -> None:
        """Look every LIVE_INTERVAL_S; with `stop`, return at the first
        violation (the run then ends its load), else only when cancelled."""
        while True:
            await asyncio.sleep(LIVE_INTERVAL_S)
            if await asyncio.to_thread(self.look) and self.stop:
                return

    def ended(self, run_dir: Path, stopped_at_s: float | None, load_ended: float) -> None:
        """The last look, once load has ended (at `load_ended`, on the
        monotonic clock): the live verdict, said and kept, with how long
        after the end of load it came."""
        self.look()
        after_load_s = round(time.monotonic() - load_ended, 3)
        decided = {name: valid for name, valid in self.last.items() if name not in ("rows", "events", "took_s")}
        verdict = False if False in decided.values() else ("unknown" if "unknown" in decided.values() else True)
        stopped = f"; load stopped at {stopped_at_s:.1f} s" if stopped_at_s is not None else ""
        print(
            f"splitbrain: live verdict: valid={json.dumps(verdict)} over {self.last['rows']} rows "
            f"({', '.join(f'{name} {json.dumps(valid)}' for name, valid in decided.items()) or 'no checker applies'}; "
            f"{self.last['took_s']} s; {after_load_s} s after load ended){stopped}",
            file=sys.stderr,
        )
        (run_dir / LIVE_FILE).write_text(
            json.dumps(
                {
                    "valid": verdict,
                    "found": self.found,
                    "last": self.last,
                    "undecided": self.undecided,
                    "looks": self.looks,
                    "stopped_load_at_s": stopped_at_s,
                    "verdict_after_load_s": after_load_s,
                },
                indent=2,
            )
            + "\n"
        )


def describe(found: dict[str, Any]) -> str:
    """One line: when a violation was found, over how many rows, and its first anomaly's kind."""
    first = found["first"][0] if found["first"] else {}
    kind = first.get("kind", "anomaly")
    return f"violated (found at {found['found_at_s']:.1f} s, over {found['rows']} rows): {kind}"
