"""Clock faults as data: every offset a fault gives is a pure function of its
arguments and the time since it began, so a seed reproduces each change."""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st

from nemesis.faults import clock
from nemesis.schedule import generate

ELAPSED = st.floats(min_value=0, max_value=600, allow_nan=False)


@given(st.integers(0, 2**32), ELAPSED)
def test_a_drawn_fault_gives_an_offset_at_every_moment(seed, elapsed):
    args = clock.draw(random.Random(seed))
    assert args["shape"] in clock.SHAPES
    assert isinstance(clock.offset_ms(args, elapsed), int)
    assert clock.changes(args) == (args["shape"] != "jump")


@given(st.integers(-10_000, 10_000), ELAPSED)
def test_a_jump_stays_where_it_landed(delta, elapsed):
    assert clock.offset_ms({"shape": "jump", "delta_ms": delta}, elapsed) == delta


@given(st.sampled_from([0.25, 0.5, 2.0, 4.0]), ELAPSED, ELAPSED)
def test_a_skewed_clock_runs_at_its_rate(rate, earlier, later):
    earlier, later = sorted((earlier, later))
    args = {"shape": "skew", "rate": rate}
    assert clock.offset_ms(args, 0) == 0
    # What the node's clock shows moves at `rate` times real time (to rounding).
    shown = (later * 1000 + clock.offset_ms(args, later)) - (earlier * 1000 + clock.offset_ms(args, earlier))
    assert abs(shown - rate * (later - earlier) * 1000) <= 1


@given(st.integers(1, 10_000).filter(bool), st.integers(1, 1000), st.integers(0, 1000))
def test_a_strobe_flips_between_its_offset_and_true_time(delta, period, flips):
    args = {"shape": "strobe", "delta_ms": delta, "period_ms": period}
    middle = (flips * period + period / 2) / 1000
    assert clock.offset_ms(args, middle) == (delta if flips % 2 == 0 else 0)


@given(st.integers(0, 2**32))
def test_the_random_schedule_sets_every_clock_right_after_moving_it(seed):
    ops = generate(random.Random(seed), ["clock", "partition"], 60, 2, 3)
    moves = [op for op in ops if op.f == "clock"]
    assert moves, "a 60 s schedule gives each kind a turn"
    for op in moves:
        assert op.args["shape"] in clock.SHAPES and isinstance(clock.offset_ms(op.args, 1.0), int)
        assert any(later.f == "clock-reset" and later.at_s > op.at_s for later in ops)
    assert ops[-1].f == "heal-all"
