"""What every numeric option and run setting may be: one table, read by the
command line's argument types and by the check of a run's configuration
(which campaigns use for their TOML), so a value is refused before anything
is written, in one line naming the option or key.

Cluster size has a stated limit, `MAX_NODES`: every directed link has its own
proxy, so n nodes need n(n-1) proxies and about 4n^2 sockets; at 15 nodes that
is under 1,000 sockets, and the harness raises its own file-descriptor limit
to the hard limit to leave room for client connections.
"""

from __future__ import annotations

import argparse
import math
import resource
from dataclasses import dataclass

MAX_NODES = 15
# A schedule of more operations than this is a mistake (an interval far too short).
MAX_SCHEDULE_OPS = 10_000


def named_twice(values: list) -> list:
    """The values a list names more than once, sorted (a setting, a campaign's
    matrix or a command line that names one twice is refused)."""
    return sorted({value for value in values if values.count(value) > 1})


def shown(bound: float) -> str:
    """A bound as a user types it: a whole number whole (the seed's bound
    printed as 9.22337e+18 with `:g`), any other as short as it goes."""
    return str(int(bound)) if float(bound).is_integer() else f"{bound:g}"


@dataclass(frozen=True)
class Range:
    """A number's kind and bounds; `above` excludes its bound, `least` includes it."""

    kind: type
    least: float | None = None
    above: float | None = None
    most: float | None = None

    def problem(self, value) -> str | None:
        """Why `value` does not fit, or None."""
        kinds = (int,) if self.kind is int else (int, float)
        if isinstance(value, bool) or not isinstance(value, kinds):
            return f"must be {'an integer' if self.kind is int else 'a number'}, not {value!r}"
        if not math.isfinite(value):
            return f"must be finite, not {value!r}"
        if self.least is not None and value < self.least:
            return f"must be at least {shown(self.least)}, not {value!r}"
        if self.above is not None and value <= self.above:
            return f"must be more than {shown(self.above)}, not {value!r}"
        if self.most is not None and value > self.most:
            return f"must be at most {shown(self.most)}, not {value!r}"
        return None

    def parse(self, text: str):
        """An argparse type: the value, or ArgumentTypeError saying why not."""
        try:
            value = self.kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"must be {'an integer' if self.kind is int else 'a number'}, not {text!r}"
            ) from None
        problem = self.problem(value)
        if problem:
            raise argparse.ArgumentTypeError(problem)
        return value


# A campaign's stopping rule: runs are added until Good–Turing's chance of a
# new coverage cell is below `until_saturated`, within `max_runs` in all.
SATURATED = Range(float, above=0.0, most=1.0)
MAX_RUNS = Range(int, least=1, most=100_000)
RUNS_PER_HOST = Range(int, least=1, most=1_024)
DEFAULT_MAX_RUNS = 200

DAY_S = 86_400.0
# A run's lull by default (RunConfig.lull_s), where its time limit is at least LULL_FROM_S: long
# enough, at the reference quorum's timeouts, for a leader elected a second after the heal (the
# checkers' recovery margin) to be unseated or to resign where it cannot keep its followers
# without writes; runs shorter than LULL_FROM_S (tests of one fault, mostly) keep all their time for load.
LULL_S, LULL_FROM_S = 4.0, 15.0
RUN_SETTINGS = {
    "nodes": Range(int, least=1, most=MAX_NODES),
    "concurrency": Range(int, least=1, most=1024),
    "time_limit_s": Range(float, above=0, most=DAY_S),
    "lull_s": Range(float, least=0, most=DAY_S),
    "interval_s": Range(float, least=0.1, most=DAY_S),
    "rate": Range(float, above=0, most=1_000_000),
    "seed": Range(int, least=0, most=2**63 - 1),
    "initial_voters": Range(int, least=1, most=MAX_NODES),
    "down_at_join": Range(int, least=0, most=MAX_NODES),
    "op_timeout_s": Range(float, above=0, most=3_600),
    "probe_interval_s": Range(float, least=0.01, most=3_600),
    "soak_sample_s": Range(float, least=0.1, most=3_600),
}
BUDGET_S = Range(float, above=0, most=DAY_S)
PIECE_ROWS = Range(int, least=100, most=1_000_000_000)
SCHEDULES = Range(int, least=1, most=10_000_000)
STEPS = Range(int, least=1, most=100_000)
OBSERVERS = Range(int, least=0, most=MAX_NODES)
SIM_NODES = Range(int, least=1, most=MAX_NODES)
PORT = Range(int, least=0, most=65_535)
REPEAT = Range(int, least=1, most=100_000)
TRIALS = Range(int, least=1, most=100)
MUTANTS = Range(int, least=1, most=10_000)
MUTANT_RUN_S = Range(int, least=5, most=3_600)


def setting_type(name: str):
    """The argparse type for the run setting `name`."""
    return RUN_SETTINGS[name].parse


def schedule_problem(time_limit_s: float, interval_s: float) -> str | None:
    """A schedule would have more operations than anyone means to run."""
    if time_limit_s / interval_s > MAX_SCHEDULE_OPS:
        return f"{time_limit_s:g} s at intervals of {interval_s:g} s is over {MAX_SCHEDULE_OPS} faults; lengthen the interval"
    return None


def raise_file_limit() -> None:
    """Raise this process's open-file limit to its hard limit: a cluster of
    MAX_NODES behind its link proxies holds about 4n^2 sockets."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = 1 << 16 if hard == resource.RLIM_INFINITY else hard
    if soft != resource.RLIM_INFINITY and soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
