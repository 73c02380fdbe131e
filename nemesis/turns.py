"""When the guided nemesis acts (nemesis/guided.py says what it aims at):
its turns as a generator, pure and seeded through its guide, so that a run
and the simulator drive the same policy and neither holds a copy of it.

Each turn is an interval of faults (two where the guide holds its first
fault longer) and a quiet interval. The first turn comes once load has
settled (SETTLE_S), not after a quiet interval: the nodes' states say what
to aim at from the start. A turn looks at the nodes and makes a first
fault; a single fault may be joined by one more at once (EARLY_S, before
the cluster reacts) and one halfway through; then what the turn made is
undone, and the run ends with `heal-all` at its time limit.

The generator yields `(at_s, op)`, seconds from the start of load: the
shell waits until then and makes `op` (None: only look), then sends back
what it sees and the time it is, `(Observation, now_s)`.
"""

from __future__ import annotations

from collections.abc import Generator

from history.faults import HEAL_ALL
from history.observation import Observation
from history.operations import NemesisOp

from .guided import Guide

# When the first turn comes, after load starts (a run starts with a leader elected).
SETTLE_S = 1.0
# How soon a risky second fault follows the first: before the cluster reacts to it (an election
# starts only after a fetch timeout).
EARLY_S = 0.1

Step = tuple[float, NemesisOp | None]
# A strategy's steps: `(at_s, op)` out, `(Observation, now_s)` back (nemesis/strategy.py).
Steps = Generator[Step, tuple[Observation, float], None]


def turns(guide: Guide, interval_s: float, limit_s: float) -> Steps:
    """The guided nemesis's steps until `limit_s`, each chosen from what the shell last saw."""
    turn = min(SETTLE_S, interval_s)
    while turn + interval_s <= limit_s:
        seen, now = yield turn, None
        first = guide.choose(seen)
        made = [first] if first else []
        held = min(guide.held_s(first, interval_s), limit_s - turn) if first else interval_s
        ops = guide.ops(turn, first, interval_s) if first else []
        for op in ops:
            seen, now = yield op.at_s, op
        if len(ops) == 1:  # a single fault: maybe more, one at once if risky, one halfway through
            for when, at_once in ((turn + EARLY_S, True), (turn + held / 2, False)):
                seen, now = yield when, None
                more = guide.overlap(seen, made, at_once)
                if more:
                    made.append(more)
                    seen, now = yield when, guide.op(when, more)
        for op in guide.undo(turn + held, made) if made else []:
            seen, now = yield op.at_s, op
        # A quiet interval follows even when undoing ran late (voters added
        # back can take seconds), so the next turn's faults keep their spacing.
        turn = max(turn + held + interval_s, now + interval_s)
    yield limit_s, NemesisOp(limit_s, HEAL_ALL)
