"""A real local cluster behind a real link mesh, for end-to-end tests."""

from __future__ import annotations

import contextlib
import random
from dataclasses import dataclass

from harness.links import OwnToxiproxy, ToxiproxyServer
from harness.local_cluster import LocalCluster
from harness.mesh import LinkMesh
from nemesis.executor import Nemesis
from results.history import HistoryRecorder, load_history


@dataclass
class Rig:
    cluster: LocalCluster
    mesh: LinkMesh
    nemesis: Nemesis
    recorder: HistoryRecorder

    def history(self):
        return load_history(self.recorder.path.parent)


@contextlib.contextmanager
def local_rig(root, nodes: int = 3, node_args: tuple[str, ...] = ()):
    with contextlib.ExitStack() as stack:
        own = stack.enter_context(OwnToxiproxy())
        server = ToxiproxyServer(own.url)
        cluster = stack.enter_context(LocalCluster(root / "cluster", nodes, node_args=node_args))
        mesh = LinkMesh(server, cluster.ids, upstream=lambda node: "{}:{}".format(*cluster.raft[node]))
        stack.callback(mesh.remove)
        cluster.routes = {link: mesh.route(link) for link in mesh.links}
        recorder = HistoryRecorder(root)
        stack.callback(recorder.close)
        nemesis = Nemesis(cluster, mesh, recorder, random.Random(0))
        stack.callback(nemesis.heal_all)
        cluster.start_all()
        cluster.wait_for_leader()
        yield Rig(cluster, mesh, nemesis, recorder)
