"""Verdicts while a run goes (`run --check-live`; `--stop-on-violation`).

Every LIVE_INTERVAL_S, what the run has recorded so far (its history and
the events its probes saw) is judged, on a thread beside the load, by the
checkers whose violation in a run's first part is one of the whole run
(each checker's `so_far`, checkers/checker.py). The events are the probes' and, where this
machine can read them as they are written, the nodes' own logs'. The first
violation each finds is said at once, with when it was found. With `stop_on_violation` the load
ends there: its faults are healed and the cluster settles as after any
load, so a campaign spends no more time on a run whose answer is known.
A look reads the history rows written since the last look (the new lines
of history.jsonl, which the recorder flushes every few milliseconds while
load runs) and those the last look left for it (checkers/carried.py),
which stand for all the rows before: its work grows with the load's rate
and concurrency, not with the run's length, and no row is held in memory
once judged. When load ends, one
last look gives the live verdict within moments; then the batch checkers decide the run as ever. They are the
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

from checkers.carried import events_left_for_later, left_for_later
from checkers.registry import final_copy_kinds
from checkers.verdict import check_prefix
from history.errors import Defect
from history.schema import EVENTS_COLUMNS, HISTORY_COLUMNS, frame
from results.memory import trim
from results.recording import lines_table
from targets.log_lines import NewLines

LIVE_INTERVAL_S = 1.0
LIVE_FILE = "live.json"
# A look that cannot decide within this many seconds answers unknown: the next one tries again.
LIVE_BUDGET_S = 5.0


class Live:
    """The run's rows so far (the recorder's history.jsonl, the
    `events` list the probes fill, and what `logged` reads of the nodes'
    logs since its last call), judged on demand; `found` holds each checker's first violation."""

    def __init__(
        self,
        recorder: Any,
        events: list[dict],
        logged: Callable[[], list[dict]],
        capabilities: dict | None,
        stop: bool,
    ) -> None:
        self.recorder = recorder
        self.new_lines = NewLines(recorder.path, append_only=True)
        self.events = events
        self.logged = logged
        self.capabilities = capabilities
        self.stop = stop
        # What the last look left for the next (checkers/carried.py), and how many rows were recorded
        # in all: a look judges these and the rows recorded since, so its work does not grow with the run.
        self.left = frame([], HISTORY_COLUMNS)
        self.rows = 0
        # So too the events: what the last look left, how many of the probes' it has seen, and how many in all.
        self.left_events = frame([], EVENTS_COLUMNS)
        self.probed = 0
        self.event_count = 0
        # The last look (`ended`) may be called while a watcher's look is still going.
        self.looking = threading.Lock()
        self.found: dict[str, dict[str, Any]] = {}
        self.looks = 0
        self.last: dict[str, Any] = {}
        self.verdict: Any = None  # the live verdict, once load has ended
        # Why a checker could not decide at the last look (its time budget, a bug of ours).
        self.undecided: dict[str, str] = {}

    def history(self) -> pd.DataFrame:
        """What the last look left and the rows recorded since, as a table:
        the whole lines written to history.jsonl since the last look, read by
        Arrow (a dict a row made into a table was most of a look's time, and
        held the interpreter from the clients)."""
        data = self.new_lines.whole()
        if not data:
            return self.left
        table = lines_table(data)
        if table is None:  # not as the recorder writes rows: a bug of ours
            raise Defect(f"{self.recorder.path}: rows the live checks cannot read")
        self.rows += len(table)
        return pd.concat([self.left, table], ignore_index=True)

    def events_now(self) -> pd.DataFrame:
        """What the last look left of the events and those seen since, in time
        order, as the run directory's events table is written (checkers rely on it)."""
        probed = self.events[self.probed :]  # (the probes append to the list as it is read)
        self.probed += len(probed)
        new = probed + self.logged()
        self.event_count += len(new)
        if not new:
            return self.left_events
        table = pd.concat([self.left_events, frame(new, EVENTS_COLUMNS)], ignore_index=True)
        return table.sort_values("time_ns", kind="stable").reset_index(drop=True)

    def look(self) -> list[str]:
        """Judge everything recorded so far; the checkers newly found violated."""
        with self.looking:
            return self._look()

    def _look(self) -> list[str]:
        began = time.monotonic()
        history, events = self.history(), self.events_now()
        results = check_prefix(history, events, LIVE_BUDGET_S, self.capabilities)
        self.left, self.left_events = left_for_later(history), events_left_for_later(events)
        del history, events
        trim()  # what the look freed handed back: else the process grew with the run's length
        took_s = time.monotonic() - began
        self.looks += 1
        new = [name for name, result in results.items() if result["valid"] is False and name not in self.found]
        # A checker once found violated stays so: a later look may no longer hold the rows that showed it
        # (they were settled, and what was left of them stands for them only against what comes later).
        self.last = {"rows": self.rows, "events": self.event_count, "took_s": round(took_s, 3)} | {
            name: False if name in self.found else result["valid"] for name, result in results.items()
        }
        self.undecided = {name: result["error"] for name, result in results.items() if result.get("error")}
        for name in new:
            self.found[name] = {
                "found_at_s": round(self.recorder.now_ns() / 1e9, 3),
                "rows": self.rows,
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
        self.verdict = verdict
        stopped = f"; load stopped at {stopped_at_s:.1f} s" if stopped_at_s is not None else ""
        # What only the final copies show is judged once the run is healed: said, so `true` is not read as final.
        after_healing = [name for name in decided if final_copy_kinds(name) and decided[name] is not False]
        said = "what the nodes' final copies show comes with the batch verdict, once healed"
        later = f"; {said}: {', '.join(after_healing)}" if after_healing else ""
        print(
            f"splitbrain: live verdict: valid={json.dumps(verdict)} over {self.last['rows']} rows "
            f"({', '.join(f'{name} {json.dumps(valid)}' for name, valid in decided.items()) or 'no checker applies'}; "
            f"{self.last['took_s']} s; {after_load_s} s after load ended){stopped}{later}",
            file=sys.stderr,
        )
        (run_dir / LIVE_FILE).write_text(
            json.dumps(
                {
                    "valid": verdict,
                    "found": self.found,
                    "last": self.last,
                    "undecided": self.undecided,
                    "after_healing": after_healing,
                    "looks": self.looks,
                    "tally": self.recorder.tally,
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
