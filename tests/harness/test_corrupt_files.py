"""`corrupt` damages a data file of a kind the target names: a log at its
tail (a torn write), blocks, snapshots and metadata anywhere; and what it
damaged (kind, file, mode, byte offset) is what changed on disk."""

from __future__ import annotations

import copy
import dataclasses
import random

import pytest

import targets
from harness.local_cluster import LocalCluster
from history.errors import ClusterError


@pytest.fixture
def cluster(tmp_path):
    """A cluster of the reference quorum that names a log and a metadata file, never started."""
    target = copy.copy(targets.get("kraft"))
    target.capabilities = dataclasses.replace(
        target.capabilities, data_files=(("log", "log.bin"), ("metadata", "*.json"))
    )
    made = LocalCluster(tmp_path, 1, target=target)
    data = made.data_dir("n1")
    data.mkdir(parents=True)
    return made


def test_a_log_is_damaged_at_its_tail_and_other_kinds_anywhere(cluster):
    data = cluster.data_dir("n1")
    original = {"log.bin": bytes(range(256)) * 4, "quorum-state.json": b"x" * 1024}
    offsets = {"log": [], "metadata": []}
    for seed in range(60):
        for name, content in original.items():
            (data / name).write_bytes(content)
        damage = cluster.corrupt("n1", random.Random(seed))
        path = data / damage["file"]
        now = path.read_bytes()
        before = original[damage["file"]]
        if damage["mode"] == "truncate":
            assert now == before[: damage["at"]] and damage["bytes"] == len(before) - damage["at"] >= 1
        else:
            changed = [i for i, (a, b) in enumerate(zip(before, now)) if a != b]
            assert changed == [damage["at"]] and bin(before[damage["at"]] ^ now[damage["at"]]).count("1") == 1
        offsets[damage["kind"]].append(damage["at"])
    assert offsets["log"] and min(offsets["log"]) >= 1024 - 64
    assert offsets["metadata"] and min(offsets["metadata"]) < 1024 - 64


def test_a_kind_can_be_named_and_one_not_written_yet_is_refused(cluster):
    data = cluster.data_dir("n1")
    (data / "log.bin").write_bytes(b"abc" * 50)
    assert cluster.corrupt("n1", random.Random(1), "log")["kind"] == "log"
    with pytest.raises(ClusterError, match="no metadata file written yet"):
        cluster.corrupt("n1", random.Random(1), "metadata")


@pytest.mark.parametrize("mode", ["flip", "truncate"])
def test_a_mode_can_be_named(cluster, mode):
    """A schedule names the damage's mode (Jepsen's #7549 was bit flips in message blocks), whatever the seed."""
    data = cluster.data_dir("n1")
    for seed in range(20):
        (data / "quorum-state.json").write_bytes(b"x" * 1024)
        assert cluster.corrupt("n1", random.Random(seed), "metadata", mode)["mode"] == mode
    with pytest.raises(ClusterError, match="mode 'melt': truncate or flip"):
        cluster.corrupt("n1", random.Random(1), "metadata", "melt")
