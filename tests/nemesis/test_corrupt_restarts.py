"""`corrupt` stops a node, damages one of its files and starts it again. A
file it could not damage (no snapshot written yet) left the node killed and
not counted down, so no heal started it: a NATS server stayed dead to the
end of its run, and the run could not be judged (`n1 no answer`)."""

from __future__ import annotations

import random

import pytest

from history.errors import ClusterError
from history.operations import NemesisOp
from nemesis.executor import Nemesis


class Stoppable:
    """A cluster of two live followers whose files hold nothing to damage."""

    ids = ["n1", "n2"]

    def __init__(self) -> None:
        self.running = set(self.ids)

    def status(self, node: str, timeout_s: float | None = None) -> dict:
        return {"state": "follower"}

    def kill(self, node: str) -> None:
        self.running.discard(node)

    def start(self, node: str) -> None:
        self.running.add(node)

    def corrupt(self, node: str, rng: random.Random, kind: str | None = None, mode: str | None = None) -> dict:
        raise ClusterError(f"corrupt {node}: no {kind} file written yet")


def test_a_node_whose_file_could_not_be_damaged_is_started_again():
    cluster = Stoppable()
    nemesis = Nemesis(cluster, links=None, recorder=None, rng=random.Random(0))
    with pytest.raises(ClusterError, match="no snapshots file written yet"):
        nemesis.perform(NemesisOp(0, "corrupt", {"target": "follower", "kind": "snapshots", "seed": 1}))
    assert cluster.running == {"n1", "n2"} and nemesis.down == set()
