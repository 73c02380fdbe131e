"""Targets declare their own options (targets/options.py): the command
line, campaign files and run.json take them from the declarations, an option
the chosen target does not declare is refused in one line listing the ones
it does, and runs recorded before the declarations read back the same."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

import targets
from harness.campaign import CampaignError, load
from harness.run import RunConfig
from history.errors import Defect
from results import run_options
from targets.options import Option, changed, refusal, settings
from tests.harness.test_cli import splitbrain

LEASE = Option("read_lease_ms", 0, "a lease", most=1_000)
BUGS = Option("bugs", (), "plant a bug", choices=("a", "b"), spelling="--bug")
PRE_VOTE = Option("pre_vote", True, "disable Pre-Vote")
DECLARED = (LEASE, BUGS, PRE_VOTE)


def test_flags_come_from_names_and_defaults():
    assert [option.flag for option in DECLARED] == ["--read-lease-ms", "--bug", "--no-pre-vote"]
    assert settings(DECLARED, {"bugs": ("a",)}) == {"read_lease_ms": 0, "bugs": ["a"], "pre_vote": True}
    assert changed(DECLARED, {"read_lease_ms": 300, "bugs": ["a", "b"], "pre_vote": False}) == [
        "--read-lease-ms 300",
        "--bug a --bug b",
        "--no-pre-vote",
    ]
    assert changed(DECLARED, settings(DECLARED, {})) == []


@given(st.one_of(st.integers(), st.text(), st.booleans(), st.none(), st.lists(st.text(max_size=3), max_size=3)))
def test_a_value_is_taken_exactly_when_its_kind_and_range_fit(value):
    lease_ok = type(value) is int and 0 <= value <= 1_000
    assert (LEASE.problem(value) is None) == lease_ok
    assert (PRE_VOTE.problem(value) is None) == isinstance(value, bool)
    bugs_ok = isinstance(value, list) and set(value) <= {"a", "b"} and len(set(value)) == len(value)
    assert (BUGS.problem(value) is None) == bugs_ok


def test_an_option_not_declared_is_refused_naming_the_declared_ones():
    assert refusal("t", DECLARED, {"pre_vote": False, "flush_interval_ms": 5}) == (
        "flush_interval_ms",
        "t does not take it; its options: --read-lease-ms, --bug, --no-pre-vote",
    )
    assert refusal("t", DECLARED, {"nope": 1}, keys=True)[1].endswith("its options: read_lease_ms, bugs, pre_vote")
    assert refusal("t", DECLARED, {"read_lease_ms": 2_000}) == ("read_lease_ms", "must be between 0 and 1000, not 2000")


def test_every_target_declares_sound_options():
    for name in targets.names():
        declared = targets.get(name).options
        assert len({option.name for option in declared}) == len(declared), name
        for option in declared:
            assert option.help and option.problem(option.normal(option.default)) is None, (name, option)
        args = targets.get(name).node_args(settings(declared, {}))
        assert isinstance(args, tuple) and all(isinstance(a, str) for a in args), name


def test_the_command_line_refuses_another_targets_option_in_one_line():
    result = splitbrain("run", "--target", "etcd", "--read-lease-ms", "300")
    assert result.returncode == 2 and result.stderr.count("\n") == 1
    assert result.stderr.startswith("splitbrain: --read-lease-ms: etcd does not take it; its options: --no-pre-vote")
    result = splitbrain("cluster", "up", "--target", "etcd", "--bug", "stale-read")
    assert result.returncode == 2 and "--bug: etcd does not take it" in result.stderr
    result = splitbrain("run", "--target", "nats", "--workload", "lock")
    assert result.returncode == 2 and result.stderr == "splitbrain: --workload: nats runs register, append, not lock\n"


def test_existing_flags_keep_their_spelling():
    config = RunConfig(options={"read_lease_ms": 300, "check_quorum": False, "bugs": ["stale-read"]})
    config.validate()
    assert {"--read-lease-ms=300", "--no-check-quorum", "--bug=stale-read", "--election-timeout-ms=300"} <= set(
        config.node_args()
    )
    assert RunConfig(target="etcd", options={"serializable_reads": True}).settings() == {
        "pre_vote": True,
        "serializable_reads": True,
        "election_timeout_ms": 300,
    }


def test_a_campaign_key_its_target_does_not_declare_is_named(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text('[campaign]\ntarget = "etcd"\n[targets.lease]\nread_lease_ms = 300\n')
    try:
        load(path)
    except CampaignError as error:
        assert str(error) == (
            f"{path}: targets.lease: read_lease_ms: etcd does not take it; "
            "its options: pre_vote, serializable_reads, election_timeout_ms"
        )
    else:
        raise AssertionError("an etcd campaign took a lease")
    path.write_text('[targets.lease]\nread_lease_ms = 300\nbugs = ["stale-read"]\n')
    ((_, planned),) = [load(path)]
    assert planned[0].config.options == {"read_lease_ms": 300, "bugs": ["stale-read"]}


def test_a_run_recorded_before_the_declarations_reads_back_the_same():
    old = {
        "target": "kraft",
        "backend": "local",
        "bugs": ["stale-read"],
        "pre_vote": False,
        "check_quorum": True,
        "serializable_reads": False,
        "election_timeout_ms": 300,
    }
    config = RunConfig.from_json(old)
    assert config.options == {
        "bugs": ["stale-read"],
        "pre_vote": False,
        "check_quorum": True,
        "election_timeout_ms": 300,
    }
    meta = {"target": "kraft", "config": old}
    assert run_options.changed(meta) == "--bug stale-read --no-pre-vote" and run_options.planted(meta) == ["stale-read"]
    assert run_options.recorded({"target": "kraft", "config": {"options": config.settings()}}) == config.settings()
    assert json.loads(json.dumps(config.settings())) == config.settings()


def test_targets_lists_each_targets_options_workloads_capabilities_and_faults():
    result = splitbrain("targets", "--json")
    assert result.returncode == 0, result.stderr
    listed = {entry["name"]: entry for entry in json.loads(result.stdout)}
    assert set(listed) == set(targets.names())
    for name, entry in listed.items():
        assert [o["flag"] for o in entry["options"]] == [o.flag for o in targets.get(name).options]
        assert entry["workloads"] == list(targets.get(name).capabilities.workloads)
    assert "clock" in listed["kraft"]["faults"]["local"] and "clock" not in listed["etcd"]["faults"]["docker"]
    assert "latency" not in listed["etcd"]["faults"]["local"] and "latency" in listed["kraft"]["faults"]["local"]
    shown = splitbrain("targets", "etcd")
    assert shown.returncode == 0 and shown.stdout.startswith("etcd: etcd ")
    assert "--serializable-reads" in shown.stdout and "--read-lease-ms" not in shown.stdout


def test_the_declarations_need_only_the_standard_library():
    """The set-up lists what to install by reading every target's declarations
    before anything is installed (a clean clone's first bootstrap): no
    target's module may import its client's packages at import time."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    for kind in ("debian", "python"):
        listed = subprocess.run(
            [sys.executable, "-S", "-m", "targets.packages", kind], cwd=root, capture_output=True, text=True, timeout=60
        )
        assert listed.returncode == 0, listed.stderr
    assert "nats-py" in listed.stdout.split()


def test_a_capability_is_declared_exactly_where_its_ability_is_implemented():
    """Optional abilities are protocols beside Target: declaring voter or
    member changes without implementing them (or the reverse) fails as the
    class is made, and every registered target holds to it."""
    from dataclasses import replace

    from targets.interface import MemberChanges, VoterChanges

    for name in targets.names():
        target = targets.get(name)
        assert target.capabilities.voter_changes == isinstance(target, VoterChanges), name
        assert target.capabilities.member_changes == isinstance(target, MemberChanges), name
    nats = type(targets.get("nats"))
    with pytest.raises(Defect, match="capabilities.member_changes is True, but it does not subclass MemberChanges"):
        type("Claims", (nats,), {"capabilities": replace(nats.capabilities, member_changes=True)})
