"""nats-server's Raft log lines as events, release by release: real lines
of each version's servers (committed from runs of that version under
partitions that isolated the leader: `fixtures/logs/VERSION/`) give
the same kinds of events as Debian's 2.9.10's: candidacies, votes, leaders
elected, leaders heard, step-downs. 2.10.25 on add fields after `granted`
in a vote response, and their votes were lost."""

from __future__ import annotations

from pathlib import Path

import pytest

from targets.nats import logs
from tests.targets.log_kinds import kinds, version_rows

FIXTURES = Path(__file__).parent / "fixtures" / "logs"
KINDS = {"transition:candidate", "vote", "transition:leader", "leader", "transition:follower"}


@pytest.mark.parametrize("version", sorted(p.name for p in FIXTURES.iterdir()))
def test_every_version_logs_the_same_kinds_of_events(version):
    rows = version_rows(FIXTURES / version, logs.events)
    assert kinds(rows) == KINDS, (version, kinds(rows))
    votes = [r for r in rows if r["event"] == "vote"]
    assert all(r["candidate"] in ("n1", "n2", "n3") and r["epoch"] > 0 for r in votes), votes
    leaders = [r for r in rows if r["event"] == "transition" and r["state"] == "leader"]
    assert {(r["node"], r["epoch"]) for r in leaders} <= {(v["candidate"], v["epoch"]) for v in votes}, (leaders, votes)
