"""Replica changes (nemesis/faults/changers/replicas.py) as the nemesis asks for them: a
stream is never scaled below two replicas (at one, NATS takes it out of
Raft, and scaled up again it is a new group whose terms start at 1: its
elections read as votes cast twice in one term, a false alarm found in
the first moonshot campaign on 2.15.1), and `rejoin` scales back to the
count the run began with, retrying an unanswered ask; a stream is scaled
down only once settled, and a rejoin done once its replicas are current."""

from __future__ import annotations

import random
from types import SimpleNamespace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from history.errors import ClusterError
from nemesis.faults.changers.replicas import LEAST, ReplicaChanger


class Asked:
    """A target that records each replica count asked for, unanswered the first `silent` times."""

    def __init__(self, silent: int = 0) -> None:
        self.asks: list[int] = []
        self.silent = silent
        self.current = ["n1", "n2", "n3", "n4", "n5"]  # the stream's leader and its current replicas

    def current_replicas(self, address, workload, timeout_s):
        return self.current

    def change_replicas(self, address, workload, replicas, timeout_s):
        self.asks.append(replicas)
        if len(self.asks) <= self.silent:
            return None
        return {"peers": ["n1", "n2"]}


def nemesis(target: Asked, replicas: int) -> SimpleNamespace:
    rows: list[dict] = []

    def record(process, type, f, **fields):
        rows.append({"type": type, "f": f, **fields})
        return rows[-1]

    ids = [f"n{i}" for i in range(1, 6)]
    cluster = SimpleNamespace(target=target, client={n: (n, 0) for n in ids}, ids=ids)
    return SimpleNamespace(
        cluster=cluster,
        recorder=SimpleNamespace(record=record, rows=rows),
        settings={"replicas": replicas},
        workload="append",
        live=lambda: ids,
        leader=lambda: "n1",
        scaled_down=False,
        scaled_off=set(),
    )


@given(replicas=st.integers(2, 5), count=st.integers(1, 4))
def test_a_stream_keeps_two_replicas_at_the_least(replicas, count):
    target = Asked()
    changes = ReplicaChanger(nemesis(target, replicas))
    changes.shrink(count, random.Random(0))
    assert target.asks == ([max(LEAST, replicas - count)] if replicas > LEAST else [])
    assert all(ask >= 2 for ask in target.asks)


def test_rejoin_scales_back_and_retries_an_unanswered_ask(monkeypatch):
    monkeypatch.setattr("nemesis.faults.changers.replicas.RETRY_S", 0)
    target = Asked()
    state = nemesis(target, 3)
    changes = ReplicaChanger(state)
    changes.shrink(2, random.Random(0))
    target.silent = 2  # the first ask back goes unanswered
    assert state.scaled_down
    assert changes.rejoin() == ["n3", "n4", "n5"]
    assert target.asks == [2, 3, 3] and not state.scaled_down
    assert [row["type"] for row in state.recorder.rows if row["type"] != "invoke"] == ["ok", "info", "ok"]


def test_a_stream_is_scaled_down_only_once_settled_and_rejoined_once_caught_up(monkeypatch):
    """No shrink while the stream has no leader or a replica lags (NATS
    may then keep one replica, a new group on its way back); a rejoin that
    never catches up is an `info`, with its ask made."""
    monkeypatch.setattr("nemesis.faults.changers.replicas.RETRY_S", 0)
    monkeypatch.setattr("nemesis.faults.changers.replicas.SETTLE_TIMEOUT_S", 0)
    target = Asked()
    target.current = ["n1", "n2"]  # a leader, one replica current of three
    changes = ReplicaChanger(nemesis(target, 3))
    with pytest.raises(ClusterError, match="not scaled down"):
        changes.shrink(1, random.Random(0))
    assert target.asks == [] and not changes.nemesis.scaled_down
    target.current = ["n1", "n2", "n3"]
    changes.shrink(1, random.Random(0))
    target.current = []  # no leader after the scale back
    with pytest.raises(ClusterError, match="caught up"):
        changes.rejoin()
    assert target.asks == [2, 3] and not changes.nemesis.scaled_down
