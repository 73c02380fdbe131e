"""`committed-data-loss` codes values as integers without hashing every
record's value (most records repeat, at the same place on another node, the
value before them). Whatever the logs hold (the same value at a place,
different ones, nulls, a value at two places), two codes are equal exactly
when the two values are, and a null is -1."""

from __future__ import annotations

import pandas as pd
from hypothesis import given
from hypothesis import strategies as st

from checkers.data_loss import _Coded
from history.schema import FINAL_COLUMNS, HISTORY_COLUMNS, frame

VALUES = st.one_of(st.none(), st.sampled_from(['"a"', '"b"', '"c"', '{"leader": 1}', '"d"']))
RECORDS = st.lists(
    st.tuples(st.sampled_from(["n1", "n2", "n3"]), st.sampled_from([None, "k"]), st.integers(0, 5), VALUES), max_size=40
)
ACKED = st.lists(st.tuples(st.sampled_from([None, "k"]), st.integers(0, 7), VALUES), max_size=15)


@given(RECORDS, ACKED)
def test_codes_are_equal_exactly_where_values_are(records, acked):
    final = frame([{"node": n, "key": k, "offset": o, "value": v} for n, k, o, v in records], FINAL_COLUMNS)
    history = frame(
        [
            {"index": i, "time_ns": i, "process": 0, "type": "ok", "f": "append", "key": k, "offset": o, "value": v}
            for i, (k, o, v) in enumerate(acked)
        ],
        HISTORY_COLUMNS,
    )
    coded = _Coded(history, final)
    values = [v for *_, v in acked] + [v for *_, v in records]
    codes = coded.acked_value.tolist() + coded.record_value.tolist()
    for value, code in zip(values, codes):
        assert (code == -1) == (value is None)
        if value is not None:
            assert coded.value_names[code] == value
    # Places: the same (key, offset) exactly where the codes are.
    places = [(k or "", o) for k, o, _ in acked] + [(k or "", o) for _, k, o, _ in records]
    coded_places = coded.acked_place.tolist() + coded.record_place.tolist()
    for i in range(len(places)):
        for j in range(len(places)):
            assert (places[i] == places[j]) == (coded_places[i] == coded_places[j])
    divergent = {
        p
        for p in set(coded.record_place.tolist())
        if len({v for (_, k, o, v), q in zip(records, coded.record_place.tolist()) if q == p and v is not None}) > 1
    }
    assert coded.divergent_places().tolist() == sorted(divergent)
    assert pd.Series(coded.node_names).is_monotonic_increasing
