"""How the membership and wipe families change who votes or holds a copy,
the way each target's operators must: voters added and removed one at a
time with AddRaftVoter and RemoveRaftVoter (the reference quorum,
`voters.py`), learners promoted to members (etcd, `members.py`), or a
stream scaled to fewer replicas and back (NATS, `replicas.py`). Helpers of
the families, not families: the fault index skips this package."""

from __future__ import annotations

from typing import Any


class Changer:
    """What each changer reads of the nemesis that makes its changes: its
    cluster, the cluster's target and the recorder its rows go to."""

    def __init__(self, nemesis: Any) -> None:
        self.nemesis = nemesis
        self.cluster = nemesis.cluster
        self.target = nemesis.cluster.target
        self.recorder = nemesis.recorder
