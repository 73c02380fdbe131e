"""The workloads' operation generators: every value a client writes is
unique across clients (so a read or a log names the one write it holds),
each operation has the shape the history format gives it, a seed gives the
same operations again, and a lock client holds, adds, then releases."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from history.errors import SettingError
from workloads.generators import GUARDED, LOCK, LOCK_TTL_MS, WORKLOADS, Operation, make_workload


def drawn(name: str, seed: int, count: int, append_keys: int = 0) -> list[Operation]:
    workload = make_workload(name, random.Random(seed), append_keys)
    clients = [workload.for_client() for _ in range(3)]
    return [clients[i % 3].next_op() for i in range(count)]


@given(st.integers(0, 2**32), st.integers(0, 4))
def test_appends_are_unique_and_go_to_the_log_or_to_lists(seed, keys):
    ops = drawn("append", seed, 200, keys)
    assert all(op.f == "append" for op in ops)
    assert len({op.value for op in ops}) == len(ops)
    assert {op.key for op in ops} <= ({f"a{i}" for i in range(keys)} if keys else {None})


@given(st.integers(0, 2**32))
def test_register_operations_have_their_shapes_and_written_values_are_unique(seed):
    ops = drawn("register", seed, 300)
    assert {op.f for op in ops} <= {"read", "write", "cas"} and {op.key for op in ops} <= {"k0", "k1", "k2"}
    assert all(op.value is None for op in ops if op.f == "read")
    written = [op.value for op in ops if op.f == "write"] + [op.value[1] for op in ops if op.f == "cas"]
    assert len(set(written)) == len(written)
    assert all(isinstance(op.value, list) and len(op.value) == 2 for op in ops if op.f == "cas")


@pytest.mark.parametrize("name, keys", [("append", 3), ("register", 0)])
def test_a_seed_gives_the_same_operations(name, keys):
    assert drawn(name, 7, 100, keys) == drawn(name, 7, 100, keys) != drawn(name, 8, 100, keys)


def test_a_lock_client_acquires_adds_and_releases_in_turn():
    session = make_workload("lock", random.Random(0)).for_client()
    assert session.next_op() == Operation("acquire", LOCK, {"ttl_ms": LOCK_TTL_MS})
    session.completed(session.next_op(), {"type": "fail"})  # not granted: it asks again
    assert session.next_op().f == "acquire"
    session.completed(session.next_op(), {"type": "ok", "value": "lock/123"})
    add = session.next_op()
    assert add.f == "add" and add.key == GUARDED
    session.completed(add, {"type": "info"})
    assert session.next_op() == Operation("release", LOCK, "lock/123")
    session.completed(session.next_op(), {"type": "ok"})
    assert session.next_op().f == "acquire"


def test_an_unknown_workload_is_refused_naming_the_setting():
    with pytest.raises(SettingError) as refused:
        make_workload("queue", random.Random(0))
    assert refused.value.setting == "workload" and all(name in refused.value.reason for name in WORKLOADS)
