"""A link's bandwidth cut (nemesis/faults/bandwidth.py), on a real
reference-quorum cluster behind our link proxies: every link is thinned
until a heal, and a correct cluster stays valid through it."""

from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd
import pytest

from harness.mesh import proxy_name
from history.operations import NemesisOp
from history.schema import named_nodes

from .rig import rig

pytestmark = pytest.mark.slow


def test_every_link_is_thinned_to_its_rate_until_a_heal(tmp_path):
    """The proxies' bandwidth toxic (its rate: tests/harness/test_toxiproxy.py) on every link, named in the row; gone after a heal."""
    with rig(tmp_path) as made:
        row = made.nemesis.invoke(NemesisOp(0, "bandwidth", {"rate_kb": 2}))
        assert row["type"] == "ok" and sorted(map(tuple, named_nodes(row["node"]))) == sorted(made.links.links)
        server = made.links.server
        for link in made.links.links:
            assert server.toxic(proxy_name(link), "bandwidth")["attributes"]["rate"] == 2, link
        made.nemesis.invoke(NemesisOp(0, "heal"))
        assert all(server.toxic(proxy_name(link), "bandwidth") is None for link in made.links.links)
        assert not made.nemesis.in_force
        made.cluster.wait_for_leader(20)


def test_a_correct_cluster_stays_valid_with_its_links_thinned(tmp_path):
    done = subprocess.run(
        [
            sys.executable, "-m", "harness.cli", "run", "--quiet", "--target", "kraft", "--workload", "append",
            "--results", str(tmp_path), "--time-limit", "12", "--interval", "2", "--seed", "3",
            "--nemesis-strategy", "random", "--nemesis", "bandwidth,kill",
        ],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    [run] = tmp_path.iterdir()
    history = pd.read_parquet(run / "history.parquet")
    nemesis = history[(history["process"] == -1) & (history["type"] == "ok")]
    assert "bandwidth" in set(nemesis["f"]) and "heal" in set(nemesis["f"]), nemesis[["f", "value"]].to_string()
    assert json.loads((run / "verdict.json").read_text())["valid"] is True
