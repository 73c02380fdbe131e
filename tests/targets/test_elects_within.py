"""The time each target declares it elects a leader within, by its settings
(`Target.elects_within_ms`: `progress` fails a majority left stuck longer).
The reference quorum's: ten fetch timeouts (the simulator's bound), and
none with a follower flush interval, where a node that started uncleanly
needs every voter's vote."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

import targets
from targets.options import settings


@given(st.integers(10, 5000), st.sampled_from([0, 0, 50, 200]))
def test_ten_fetch_timeouts_and_none_with_a_flush_interval(fetch_ms, flush_ms):
    kraft = targets.get("kraft")
    chosen = settings(kraft.options, {"fetch_timeout_ms": fetch_ms, "flush_interval_ms": flush_ms})
    assert kraft.elects_within_ms(chosen) == (None if flush_ms else 10 * fetch_ms)


def test_the_default_settings_give_six_seconds_and_etcd_and_nats_declare_none():
    """etcd declares none: at its 300 ms election timeout a loaded machine
    left two correct members splitting their votes for 5 s. NATS, whose
    elections take 4 to 9 s, declares none either."""
    for name, within in (("kraft", 6000), ("etcd", None), ("nats", None)):
        assert targets.get(name).elects_within_ms(settings(targets.get(name).options, {})) == within
