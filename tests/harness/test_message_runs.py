"""Message faults on a real reference-quorum cluster: its links' proxies
frame the JSON-lines traffic, and single messages are dropped, held,
duplicated and reordered while nodes are killed and elect. A correct node
stays valid under all of it (Raft takes lost, late, repeated and swapped
messages), and every fault's row names the messages it acted on."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import replace

import pandas as pd
import pytest

import targets
from harness.run import RunConfig
from history.errors import SettingError
from history.messages import IN_ELECTION
from history.operations import NemesisOp
from history.schema import named_nodes
from nemesis.faults.messages import KINDS as SINGLE
from targets.kraft.framing import KINDS

from .rig import rig

pytestmark = pytest.mark.slow


def splitbrain(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness.cli", *args], capture_output=True, text=True, timeout=600)


def test_a_correct_cluster_stays_valid_and_each_row_names_its_messages(tmp_path):
    done = splitbrain(
        "run", "--quiet", "--target", "kraft", "--workload", "append", "--results", str(tmp_path),
        "--time-limit", "24", "--interval", "1.5", "--seed", "5", "--nemesis-strategy", "random",
        "--nemesis", ",".join([*SINGLE, "kill"]),
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    [run] = tmp_path.iterdir()
    history = pd.read_parquet(run / "history.parquet")
    made = history[(history["process"] == -1) & (history["type"] == "ok") & history["f"].isin(SINGLE)]
    acted = [(f, message) for f, node in zip(made["f"], made["node"]) for message in named_nodes(node)]
    assert len({f for f, _ in acted}) >= 2, made[["f", "value", "node"]].to_string()
    for _, message in acted:
        src, dst = message["link"]
        assert {src, dst} <= {"n1", "n2", "n3"} and src != dst, message
        assert message["kind"] in KINDS.values() and message["ordinal"] >= 1, message
    cells = json.loads((run / "verdict.json").read_text())["coverage"]["cells"]
    assert {(f, m["kind"]) for f, m in acted} <= {(c["fault"], c["role"]) for c in cells if "+" not in c["role"]} | {
        (c["fault"], kind) for c in cells for kind in c["role"].split("+")
    }


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        (("--backend", "docker", "--net", "iptables"), "need the link proxies splitbrain starts"),
        (("--target", "etcd", "--backend", "docker"), "need the link proxies splitbrain starts (the local backend)"),
    ],
)
def test_message_faults_where_no_proxy_frames_the_traffic_are_refused_in_one_line(tmp_path, extra, said):
    done = splitbrain(
        "run", "--results", str(tmp_path), "--nemesis", "message-drop", "--nemesis-strategy", "random", *extra
    )
    assert done.returncode == 2 and said in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert not tmp_path.exists() or not any(tmp_path.iterdir())


def test_a_target_that_frames_nothing_refuses_message_faults_in_one_line(monkeypatch):
    """Every target frames its peer traffic now; one whose capabilities
    named no framing would be refused before the run, naming itself."""
    target = targets.get("nats")
    monkeypatch.setattr(type(target), "capabilities", replace(target.capabilities, framing=""))
    with pytest.raises(
        SettingError, match="^nemesis: nats declares no framing of its peer messages: no message faults$"
    ):
        RunConfig(target="nats", nemesis=["message-drop"], nemesis_strategy="random").validate()


def test_a_schedule_s_message_fault_of_a_kind_or_moment_the_target_cannot_show_is_refused_in_one_line(tmp_path):
    """A run description's schedule naming a kind of message the reference
    quorum never sends (or a moment it cannot show) is refused before the run."""
    run_dir = tmp_path / "given"
    run_dir.mkdir()
    ops = [{"at_s": 1.0, "f": "message-drop", "args": {"message": "read-index", "target": "any"}}]
    config = {"nemesis_strategy": "random", "nemesis": ["kill"], "time_limit_s": 5}
    (run_dir / "run.json").write_text(json.dumps({"config": config, "schedule": ops}))
    done = splitbrain("replay", str(run_dir), "--results", str(tmp_path / "again"))
    said = "schedule: operation 1 (message-drop): message 'read-index' is none of the target's: any, "
    assert done.returncode == 2 and said in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert not (tmp_path / "again").exists()


def test_a_vote_request_dropped_in_an_election_is_named_and_the_cluster_still_elects(tmp_path):
    """The leader killed, the next vote request anywhere is dropped: its row
    names it, its sender and receiver, and the epoch it asked for; the
    candidate asks again (its connection never closed) and a leader is
    elected."""
    with rig(tmp_path, framed=True) as made:
        leader = made.cluster.wait_for_leader(20)
        made.nemesis.invoke(NemesisOp(0, "kill", {"nodes": [leader]}))
        row = made.nemesis.invoke(
            NemesisOp(0, "message-drop", {"target": "any", "message": "vote-request", "within_ms": 10_000})
        )
        [dropped] = named_nodes(row["node"])
        assert dropped["kind"] == "vote-request" and leader not in dropped["link"], dropped
        assert dropped["epoch"] >= 1 and isinstance(dropped["pre_vote"], bool), dropped
        assert made.cluster.wait_for_leader(20, exclude=(leader,)) != leader
        assert made.links.server.use().get_proxy(f"{dropped['link'][0]}-{dropped['link'][1]}").toxics() == {}


def test_the_guided_nemesis_faults_an_election_s_messages_as_it_kills_a_leader(tmp_path):
    done = splitbrain(
        "run", "--quiet", "--target", "kraft", "--workload", "append", "--results", str(tmp_path),
        "--time-limit", "14", "--interval", "2", "--seed", "3", "--nemesis-strategy", "guided",
        "--nemesis", "kill,message-drop,message-reorder",
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    [run] = tmp_path.iterdir()
    history = pd.read_parquet(run / "history.parquet")
    made = history[(history["process"] == -1) & (history["type"] == "ok") & history["f"].isin(SINGLE)]
    acted = [message["kind"] for node in made["node"] for message in named_nodes(node)]
    assert set(acted) & IN_ELECTION, made[["f", "value", "node"]].to_string()


def test_a_lasting_loss_thins_every_link_until_its_heal_names_what_it_dropped(tmp_path):
    with rig(tmp_path, framed=True) as made:
        made.cluster.wait_for_leader(20)
        lost = made.nemesis.invoke(NemesisOp(0, "message-loss", {"per_mille": 1000, "message": "fetch"}))
        assert len(named_nodes(lost["node"])) == 6  # every link
        time.sleep(1.0)  # every fetch lost: the followers give up on the leader
        healed = made.nemesis.invoke(NemesisOp(0, "heal", {"of": "message-loss"}))
        dropped = named_nodes(healed["node"])
        assert dropped and {m["kind"] for m in dropped} == {"fetch"}, dropped
        assert [m["wall_ns"] for m in dropped] == sorted(m["wall_ns"] for m in dropped)
        assert made.cluster.wait_for_leader(20)
        assert made.nemesis.losses == [] and not made.nemesis.in_force
