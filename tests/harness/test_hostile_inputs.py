"""A hostile user, over every subcommand's file and folder inputs: bytes
that are not UTF-8, an empty file, a valid file cut short, a file of the
right syntax and the wrong shape, a folder where a file goes and a file
where a folder goes; then names given twice and options that conflict.
Every case must end in exit 2 with one line on stderr (no traceback, no
"internal error") and leave nothing behind in the folder it ran in.

Each case is a command line whose inputs are written into a fresh folder
first (`INPUTS`: where the input goes, and the valid file it is made
from). The commands run in-process, as in test_cli_fuzz.py; each input is
bad, so none may start a cluster. Hypothesis draws the bytes of the
non-UTF-8 class on top of the fixed cases.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from history.schema import HISTORY_COLUMNS, frame
from tests.harness.test_cli_fuzz import CASES, assert_one_line_error, fresh, inputs_of

ROOT = Path(__file__).resolve().parents[2]
EDN = (ROOT / "tests" / "data" / "outside" / "knossos-histories" / "good" / "memstress3-0.edn").read_text()
POLICY = 'required = ["linearizable"]\nmay_be_absent = ["linearizable"]\n'
HOSTS = json.dumps(
    {
        "user": "root",
        "nodes": {
            f"n{i}": {"ssh": f"10.9.9.{i}:22", "raft": f"10.9.9.{i}:9000", "client": f"10.9.9.{i}:9100"}
            for i in (1, 2, 3)
        },
    }
)
RUN_JSON = json.dumps({"run_id": "r", "seed": 1, "config": {"nemesis": ["kill"], "time_limit_s": 5}, "schedule": []})


def whole_run(folder: Path, verdict_valid: bool = False) -> None:
    """A run directory `run` in `folder` with settings, a history and a verdict."""
    run = folder / "run"
    run.mkdir(exist_ok=True)
    (run / "run.json").write_text(RUN_JSON)
    rows = [
        {"index": 0, "time_ns": 1, "process": 0, "type": "invoke", "f": "read", "key": "k"},
        {"index": 1, "time_ns": 2, "process": 0, "type": "ok", "f": "read", "key": "k", "value": "null"},
    ]
    frame(rows, HISTORY_COLUMNS).to_parquet(run / "history.parquet", index=False)
    checkers = {"linearizable": {"valid": verdict_valid}}
    (run / "verdict.json").write_text(json.dumps({"valid": verdict_valid, "checkers": checkers}))


@dataclass(frozen=True)
class Input:
    """A file one command reads: where it goes in the folder, what a valid one
    holds, one of the right syntax and the wrong shape, the command line, and
    what else the folder needs first."""

    path: str
    valid: str
    wrong_shape: str
    argv: list[str]
    before: Callable[[Path], None] = lambda folder: None


INPUTS = {
    "campaign": Input(
        "in.toml",
        (ROOT / "examples" / "campaign.toml").read_text().replace('"runs/campaigns"', '"out"'),
        'campaign = "everything"\n',
        ["campaign", "--quiet", "in.toml"],
    ),
    "gate --policy": Input(
        "in.toml", POLICY, "required = 3\n", ["gate", "run", "--policy", "in.toml", "--junit", "out/j.xml"], whole_run
    ),
    "mutate --policy": Input(
        "in.toml", POLICY, "[required]\nlinearizable = true\n", ["mutate", "--policy", "in.toml", "--results", "out"]
    ),
    "run --hosts": Input(
        "in.json",
        HOSTS,
        '{"nodes": ["n1", "n2"]}',
        ["run", "--backend", "ssh", "--hosts", "in.json", "--results", "out"],
    ),
    "soak --hosts": Input(
        "in.json", HOSTS, '{"nodes": {"n1": 7}}', ["soak", "--backend", "ssh", "--hosts", "in.json", "--results", "out"]
    ),
    "simulate --memory": Input(
        "in.json",
        json.dumps({"states": {}, "counts": {}}),
        '["a", "list"]',
        ["simulate", "--nemesis-strategy", "novelty", "--schedules", "2", "--quiet", "--memory", "in.json"],
    ),
    "run-settings": Input("in.json", json.dumps({"time_limit_s": 5}), '["a", "list"]', ["run-settings", "in.json"]),
    "import": Input(
        "in.edn",
        EDN,
        "[1 2 3]",
        ["import", "--quiet", "--format", "jepsen-edn", "--model", "cas-register", "--to", "out", "in.edn"],
    ),
    "replay": Input("run/run.json", RUN_JSON, '["a", "list"]', ["replay", "--quiet", "run"], whole_run),
    "shrink": Input("run/run.json", RUN_JSON, '{"config": 3}', ["shrink", "run"], whole_run),
    "check": Input("run/run.json", RUN_JSON, '["a", "list"]', ["check", "--quiet", "run"], whole_run),
    "export": Input("run/run.json", RUN_JSON, '{"model": 3}', ["export", "run", "--to", "out.edn"], whole_run),
    "archive --verify": Input(
        "store/manifest.json", json.dumps({"runs": {}}), '{"runs": []}', ["archive", "--verify", "store"]
    ),
    "analyze": Input("store/manifest.json", json.dumps({"runs": {}}), '{"runs": 3}', ["analyze", "--quiet", "store"]),
    "cluster status": Input(
        "state/cluster.json",
        json.dumps({"clients": {"n1": ["127.0.0.1", 1]}}),
        '{"clients": []}',
        ["cluster", "status", "--state-dir", "state"],
    ),
}


def cut_short(text: str) -> bytes:
    data = text.encode()
    return data[: max(1, len(data) // 2)]


CONTENTS: dict[str, Callable[[Input], bytes | None]] = {
    "not-utf-8": lambda i: b"\xff\xfe\x00\xc3(" + i.valid.encode()[:20],
    "empty": lambda i: b"",
    "cut-short": lambda i: cut_short(i.valid),
    "wrong-shape": lambda i: i.wrong_shape.encode(),
    "a-folder": lambda i: None,
}


def prepared(base: Path, given: Input, content: bytes | None) -> Path:
    folder = fresh(base)
    given.before(folder)
    path = folder / given.path
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        path.unlink()
    if content is None:
        path.mkdir()
    else:
        path.write_bytes(content)
    return folder


@pytest.fixture
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("hostile")


@pytest.mark.parametrize("content", sorted(CONTENTS))
@pytest.mark.parametrize("name", sorted(INPUTS))
def test_a_bad_file_is_one_line_and_nothing_written(folder, name, content):
    given = INPUTS[name]
    where = prepared(folder, given, CONTENTS[content](given))
    assert_one_line_error(where, given.argv, inputs_of(where))


NOT_UTF_8 = st.binary(min_size=1, max_size=120).filter(lambda data: not _decodes(data))


def _decodes(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


@CASES
@given(name=st.sampled_from(sorted(INPUTS)), data=NOT_UTF_8)
def test_any_bytes_that_are_not_utf_8_are_one_line(folder, name, data):
    given = INPUTS[name]
    where = prepared(folder, given, data)
    assert_one_line_error(where, given.argv, inputs_of(where))


# A file where a folder goes: (command line, the file it names).
FOLDERS = {
    "run --results": (["run", "--results", "taken"], "taken"),
    "soak --results": (["soak", "--results", "taken"], "taken"),
    "campaign --results": (["campaign", "--quiet", "c.toml", "--results", "taken"], "taken"),
    "mutate --results": (["mutate", "--results", "taken"], "taken"),
    "simulate --write-schedules": (["simulate", "--schedules", "2", "--quiet", "--write-schedules", "taken"], "taken"),
    "archive --to": (["archive", "--to", "taken", "run"], "taken"),
    "analyze": (["analyze", "--quiet", "taken"], "taken"),
    "import --to": (["import", "--format", "jepsen-edn", "--model", "cas-register", "--to", "taken", "h.edn"], "taken"),
    "replay --results": (["replay", "--quiet", "--results", "taken", "run"], "taken"),
    "shrink --results": (["shrink", "--results", "taken", "run"], "taken"),
    "serve": (["serve", "taken"], "taken"),
    "cluster down --state-dir": (["cluster", "down", "--state-dir", "taken"], "taken"),
    "cluster status --state-dir": (["cluster", "status", "--state-dir", "taken"], "taken"),
    "check": (["check", "--quiet", "taken"], "taken"),
    "replay": (["replay", "--quiet", "taken"], "taken"),
}


@pytest.mark.parametrize("name", sorted(FOLDERS))
def test_a_file_where_a_folder_goes_is_one_line(folder, name):
    argv, taken = FOLDERS[name]
    where = fresh(folder)
    whole_run(where)
    (where / "c.toml").write_text((ROOT / "examples" / "campaign.toml").read_text())
    (where / "h.edn").write_text(EDN)
    (where / taken).write_text("mine")
    assert_one_line_error(where, argv, inputs_of(where))
    assert (where / taken).read_text() == "mine"


# Names given twice, and options that cannot go together.
CONFLICTS = {
    "run --nemesis twice": ["run", "--nemesis", "kill,pause,kill", "--results", "out"],
    "run --bug twice": ["run", "--bug", "stale-read", "--bug", "stale-read", "--results", "out"],
    "run --topologies twice": [
        "run",
        "--nemesis",
        "partition",
        "--topologies",
        "majority,majority",
        "--results",
        "out",
    ],
    "mutate --strategies twice": ["mutate", "--strategies", "guided,guided", "--results", "out"],
    "campaign nemeses twice": ["campaign", "--quiet", "twice.toml"],
    "etcd on docker through proxies": ["run", "--target", "etcd", "--backend", "docker", "--net", "proxy"],
    "cluster down --run and --all": ["cluster", "down", "--run", "x", "--all"],
    "cluster up --run": ["cluster", "up", "--run", "x"],
    "soak --repeat": ["soak", "--repeat", "2", "--results", "out"],
    "campaign --runs-per-host without spark": ["campaign", "--quiet", "c.toml", "--runs-per-host", "2"],
    "run --hosts off ssh": ["run", "--backend", "local", "--hosts", "hosts.json", "--results", "out"],
    "shrink --to a folder": ["shrink", "--to", "run", "run"],
}


@pytest.mark.parametrize("name", sorted(CONFLICTS))
def test_names_given_twice_and_conflicting_options_are_one_line(folder, name):
    where = fresh(folder)
    whole_run(where)
    campaign = (ROOT / "examples" / "campaign.toml").read_text().replace('"runs/campaigns"', '"out"')
    (where / "c.toml").write_text(campaign)
    (where / "twice.toml").write_text(campaign + '\n[targets.etcd]\nnemeses = ["kill", "kill"]\n')
    (where / "hosts.json").write_text(HOSTS)
    assert_one_line_error(where, CONFLICTS[name], inputs_of(where))
