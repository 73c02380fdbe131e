"""A real cluster (local processes or Docker containers) behind a real link
mesh, with a recording nemesis, for end-to-end tests."""

from __future__ import annotations

import contextlib
import random
import uuid
from dataclasses import dataclass

from harness.backends import bring_up
from nemesis.executor import Nemesis
from results.recording import HistoryRecorder, load_history


@dataclass
class Rig:
    cluster: object
    links: object
    nemesis: Nemesis
    recorder: HistoryRecorder

    def history(self):
        return load_history(self.recorder.path.parent)


@contextlib.contextmanager
def rig(
    root, backend: str = "local", nodes: int = 3, net: str = "proxy", options: dict | None = None, framed: bool = False
):
    """`framed`: the link proxies cut the traffic into messages (for message faults)."""
    with contextlib.ExitStack() as stack:
        run_id = f"test-{uuid.uuid4().hex[:8]}"
        cluster, links = bring_up(stack, backend, root, run_id, nodes, options, net=net, framed=framed)
        recorder = HistoryRecorder(root)
        stack.callback(recorder.close)
        nemesis = Nemesis(cluster, links, recorder, random.Random(0))
        stack.callback(nemesis.heal_all)
        cluster.start_all()
        cluster.wait_for_leader(20)
        yield Rig(cluster, links, nemesis, recorder)
