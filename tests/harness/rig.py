"""A real cluster (local processes or Docker containers) behind a real link
mesh, with a recording nemesis, for end-to-end tests."""

from __future__ import annotations

import contextlib
import random
import uuid
from dataclasses import dataclass

from harness.docker_cluster import DockerCluster
from harness.iptables_links import IptablesLinks
from harness.links import OwnToxiproxy, ToxiproxyServer, wait_for_api
from harness.local_cluster import LocalCluster
from harness.mesh import LinkMesh
from nemesis.executor import Nemesis
from results.history import HistoryRecorder, load_history


@dataclass
class Rig:
    cluster: object
    links: object
    nemesis: Nemesis
    recorder: HistoryRecorder

    def history(self):
        return load_history(self.recorder.path.parent)


@contextlib.contextmanager
def rig(root, backend: str = "local", nodes: int = 3, net: str = "proxy", node_args: tuple[str, ...] = ()):
    with contextlib.ExitStack() as stack:
        if backend == "docker":
            cluster = DockerCluster(root / "cluster", f"test-{uuid.uuid4().hex[:8]}", nodes, node_args=node_args)
            stack.callback(cluster.close)
            if net == "iptables":
                links = IptablesLinks(cluster)
            else:
                server = ToxiproxyServer(cluster.start_toxiproxy())
                wait_for_api(server)
                links = LinkMesh(server, cluster.ids, lambda n: f"{n}:{cluster.raft[n][1]}", "0.0.0.0", "toxiproxy")
        else:
            own = stack.enter_context(OwnToxiproxy())
            cluster = stack.enter_context(LocalCluster(root / "cluster", nodes, node_args=node_args))
            links = LinkMesh(ToxiproxyServer(own.url), cluster.ids, lambda n: "{}:{}".format(*cluster.raft[n]))
        if isinstance(links, LinkMesh):
            stack.callback(links.remove)
            cluster.routes = {link: links.route(link) for link in links.links}
        recorder = HistoryRecorder(root)
        stack.callback(recorder.close)
        nemesis = Nemesis(cluster, links, recorder, random.Random(0))
        stack.callback(nemesis.heal_all)
        cluster.start_all()
        cluster.wait_for_leader(20)
        yield Rig(cluster, links, nemesis, recorder)
