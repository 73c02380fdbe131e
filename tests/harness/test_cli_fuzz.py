"""The command line under hypothesis-made bad input: out-of-range and
malformed numbers for every numeric option, unknown options, and bad files
(random bytes, truncated, wrong types, wrong columns) for every command that
reads one: 8 tests of 80 cases each. Each case must end in exit 2 with one line on stderr, no
traceback, and nothing left behind in the folder it ran in.

The commands run in-process (`harness.cli.main`), so the hundreds of cases
take seconds; every input is bad by construction, so none starts a cluster.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness import limits
from harness.cli import build_parser, main
from history.schema import HISTORY_COLUMNS, frame

FRACTIONS = st.integers(-(10**6), 10**6).map(lambda i: i + 0.5)  # numbers that are not integers
CASES = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

# (command, option, range): every numeric option of every command.
NUMERIC = [
    *[
        ("run", f"--{name}", limits.RUN_SETTINGS[setting])
        for name, setting in [
            ("nodes", "nodes"),
            ("concurrency", "concurrency"),
            ("time-limit", "time_limit_s"),
            ("interval", "interval_s"),
            ("rate", "rate"),
            ("seed", "seed"),
            ("initial-voters", "initial_voters"),
            ("down-at-join", "down_at_join"),
        ]
    ],
    ("simulate", "--nodes", limits.SIM_NODES),
    ("simulate", "--schedules", limits.SCHEDULES),
    ("simulate", "--steps", limits.STEPS),
    ("simulate", "--observers", limits.OBSERVERS),
    ("check", "--budget", limits.BUDGET_S),
    ("analyze", "--budget", limits.BUDGET_S),
    ("cluster", "--nodes", limits.RUN_SETTINGS["nodes"]),
]
# What each command needs besides the option under test (inputs that do not exist are never read first).
REST = {"run": [], "simulate": [], "check": ["nothing-here"], "analyze": ["nothing-here"], "cluster": ["status"]}


def out_of_range(allowed: limits.Range) -> st.SearchStrategy[str]:
    """Text that is not a number of the right kind, or a number outside the range."""
    if allowed.kind is int:
        numbers = [
            st.integers(max_value=int(allowed.least) - 1),
            st.integers(min_value=int(allowed.most) + 1),
            FRACTIONS,
        ]
    else:
        low = allowed.least if allowed.least is not None else allowed.above
        numbers = [
            st.floats(max_value=low, exclude_max=allowed.least is not None, allow_nan=False, min_value=-1e12),
            st.floats(min_value=allowed.most, exclude_min=True, allow_nan=False, max_value=1e300),
        ]
    junk = st.text(min_size=1, max_size=12).filter(lambda t: not _number(t, allowed.kind))
    return st.one_of(*[n.map(str) for n in numbers], junk, st.sampled_from(["nan", "inf", "-inf", ""]))


def _number(text: str, kind: type) -> bool:
    try:
        value = kind(text)
    except ValueError:
        return False
    return math.isfinite(value)


def run_cli(folder: Path, argv: list[str]) -> tuple[int, str, str]:
    """`splitbrain ARGV` in `folder`: exit code, stdout, stderr."""
    out, err = io.StringIO(), io.StringIO()
    before = os.getcwd()
    os.chdir(folder)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(argv)
            except SystemExit as exit_:
                code = exit_.code
    finally:
        os.chdir(before)
    return code, out.getvalue(), err.getvalue()


def assert_one_line_error(folder: Path, argv: list[str], inputs: set[str]) -> None:
    code, _, err = run_cli(folder, argv)
    assert code == 2, (argv, code, err)
    assert "Traceback" not in err and "internal error" not in err, (argv, err)
    assert len(err.strip().splitlines()) == 1, (argv, err)
    left = {str(p.relative_to(folder)) for p in folder.rglob("*")} - inputs
    assert not left, (argv, left)


def inputs_of(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


@pytest.fixture
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("fuzz")


def fresh(base: Path) -> Path:
    """A new empty folder per example (hypothesis reuses the fixture's)."""
    path = base / os.urandom(6).hex()
    path.mkdir()
    return path


@CASES
@given(case=st.sampled_from(NUMERIC).flatmap(lambda c: st.tuples(st.just(c), out_of_range(c[2]))))
def test_numeric_options_out_of_range(folder, case):
    (command, option, _), value = case
    where = fresh(folder)
    assert_one_line_error(where, [command, *REST[command], f"{option}={value}"], set())


def known_options() -> set[str]:
    """Every option any subcommand has (the fuzz draws others)."""
    known = {"--help", "--version", "--listen"}
    for action in build_parser()._subparsers._group_actions[0].choices.values():
        known |= {option for a in action._actions for option in a.option_strings}
    return known


KNOWN = known_options()


@CASES
@given(
    command=st.sampled_from(sorted(REST) + ["gate", "import", "archive", "campaign", "toxiproxy"]),
    option=st.from_regex(r"--[a-z][a-z-]{2,15}", fullmatch=True).filter(lambda o: o not in KNOWN),
)
def test_unknown_options(folder, command, option):
    assert_one_line_error(fresh(folder), [command, option, "x"], set())


def garbage_bytes() -> st.SearchStrategy[bytes]:
    return st.binary(min_size=1, max_size=200)


def history_rows() -> list[dict]:
    return [
        {"index": 0, "time_ns": 1, "process": 0, "type": "invoke", "f": "read", "key": "k"},
        {"index": 1, "time_ns": 2, "process": 0, "type": "ok", "f": "read", "key": "k", "value": "null"},
    ]


def bad_jsonl_line() -> st.SearchStrategy[str]:
    """A history line that is not a history row: not JSON, not an object, or a
    field of the wrong type."""
    wrong = st.sampled_from(["index", "time_ns", "process"]).flatmap(
        lambda name: st.one_of(st.text(max_size=5), FRACTIONS, st.booleans(), st.lists(st.integers(), max_size=2)).map(
            lambda value: json.dumps({**history_rows()[0], name: value})
        )
    )
    return st.one_of(
        wrong,
        st.sampled_from(["[1, 2]", '"row"', "{", "null"]),
        st.builds(
            lambda t: json.dumps({**history_rows()[0], "type": t}),
            st.text(max_size=8).filter(lambda t: t not in ("invoke", "ok", "fail", "info")),
        ),
        st.builds(
            lambda row: json.dumps({k: v for k, v in history_rows()[0].items() if k != row}),
            st.sampled_from(["index", "time_ns", "process", "type", "f"]),
        ),
    )


@CASES
@given(line=bad_jsonl_line(), where=st.integers(0, 2))
def test_check_names_a_bad_history_line(folder, line, where):
    """A bad line anywhere but last (a torn last line is a crash's, and left out with a warning)."""
    run_dir = fresh(folder) / "run"
    run_dir.mkdir()
    lines = [json.dumps(r) for r in history_rows()]
    lines.insert(where, line)
    (run_dir / "history.jsonl").write_text("\n".join(lines + [json.dumps({**history_rows()[0], "index": 2})]) + "\n")
    assert_one_line_error(run_dir.parent, ["check", "--quiet", "run"], inputs_of(run_dir.parent))


@CASES
@given(
    table=st.sampled_from(["history.parquet", "events.parquet", "final.parquet", "run.json"]),
    content=st.one_of(garbage_bytes(), st.sampled_from(["truncated", "wrong-columns", "wrong-types"])),
)
def test_check_names_a_bad_table(folder, table, content):
    base = fresh(folder)
    run_dir = base / "run"
    run_dir.mkdir()
    good = frame(history_rows(), HISTORY_COLUMNS)
    good.to_parquet(run_dir / "history.parquet", index=False)
    path = run_dir / table
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content == "truncated":
        good.to_parquet(path, index=False)
        path.write_bytes(path.read_bytes()[: len(path.read_bytes()) // 2])
    elif table == "run.json":
        path.write_text(json.dumps(["not", "a", "run"]) if content == "wrong-columns" else '{"source": 1}')
    elif content == "wrong-columns":
        pd.DataFrame({"index": [0], "colour": ["red"]}).to_parquet(path, index=False)
    else:  # a column of the contract in a type that cannot be cast to it
        column = {"history.parquet": "process", "events.parquet": "time_ns", "final.parquet": "offset"}[table]
        pd.DataFrame({column: ["seven"], "node": ["n1"]}).to_parquet(path, index=False)
    if table != "history.parquet" and content == "wrong-columns" and table != "run.json":
        return  # missing columns of events and final are allowed (older runs): not bad input
    assert_one_line_error(base, ["check", "--quiet", "run"], inputs_of(base))


CAMPAIGN_KEYS = {
    "nodes": st.one_of(st.integers(max_value=0), st.integers(min_value=limits.MAX_NODES + 1), st.text(max_size=4)),
    "time_limit_s": st.one_of(st.text(max_size=4), st.floats(max_value=0), st.booleans()),
    "interval_s": st.floats(max_value=0.09, allow_nan=False),
    "rate": st.floats(max_value=0, allow_nan=False),
    "concurrency": st.integers(max_value=0),
    "workloads": st.lists(
        st.text(min_size=1, max_size=6).filter(lambda t: t not in ("append", "register")), min_size=1, max_size=2
    ),
    "nemeses": st.lists(
        st.text(min_size=1, max_size=6).filter(lambda t: not set(t.split(",")) <= {"", "none", "kill", "pause"}),
        min_size=1,
        max_size=2,
    ),
    "repeats": st.integers(max_value=0),
    "seeds": st.one_of(st.just([]), st.lists(st.integers(max_value=-1), min_size=1, max_size=2)),
    "bugs": st.lists(st.text(min_size=1, max_size=6), min_size=1, max_size=2),
    "pre_vote": st.integers(),
}


def toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return (
            repr(value) if math.isfinite(value) else ("nan" if math.isnan(value) else ("inf" if value > 0 else "-inf"))
        )
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return json.dumps(value) if isinstance(value, str) else str(value)


@CASES
@given(key=st.sampled_from(sorted(CAMPAIGN_KEYS)).flatmap(lambda k: st.tuples(st.just(k), CAMPAIGN_KEYS[k])))
def test_campaign_settings_out_of_range_write_nothing(folder, key):
    name, value = key
    base = fresh(folder)
    (base / "c.toml").write_text(f'[campaign]\nresults = "out"\nnemeses = ["kill"]\n{name} = {toml_value(value)}\n')
    assert_one_line_error(base, ["campaign", "--quiet", "c.toml"], {"c.toml"})


@CASES
@given(
    content=st.one_of(garbage_bytes(), st.just(b""), st.just(b"[]"), st.just(b"[{:type :invoke}]")),
    fmt=st.sampled_from(["jepsen-edn", "jepsen-log"]),
)
def test_import_of_bad_files_leaves_nothing(folder, content, fmt):
    base = fresh(folder)
    (base / "h.edn").write_bytes(content)
    argv = ["import", "--quiet", "--format", fmt, "--model", "cas-register", "--to", "out", "h.edn"]
    if (
        run_cli(
            fresh(folder),
            ["import", "--quiet", "--format", fmt, "--model", "cas-register", "--to", "out", str(base / "h.edn")],
        )[0]
        == 0
    ):
        return  # random bytes that happen to be a history are not bad input
    assert_one_line_error(base, argv, {"h.edn"})


# (a state file a command reads, its argv, contents of the right JSON shape but wrong fields)
STATE_FILES = [
    (
        "store/manifest.json",
        ["archive", "--verify", "store"],
        [b"{}", b'{"runs": []}', b'{"runs": {"a": {"files": {"x": {}}}}}'],
    ),
    (
        "state/cluster.json",
        ["cluster", "status", "--state-dir", "state"],
        [b"{}", b'{"clients": 1}', b'{"clients": {"n1": [1]}}'],
    ),
]


@CASES
@given(
    case=st.sampled_from(STATE_FILES).flatmap(
        lambda c: st.tuples(st.just(c), st.one_of(garbage_bytes(), st.sampled_from(c[2])))
    )
)
def test_bad_state_files(folder, case):
    (name, argv, _), content = case
    base = fresh(folder)
    (base / name).parent.mkdir()
    (base / name).write_bytes(content)
    assert_one_line_error(base, argv, inputs_of(base))


@CASES
@given(
    text=st.one_of(
        st.text(max_size=40).map(lambda t: f"required = {json.dumps(t)}\n"),
        st.lists(st.text(min_size=1, max_size=10), min_size=1, max_size=3)
        .filter(lambda names: not set(names) <= {"election-safety", "linearizable", "availability"})
        .map(lambda names: f"required = {json.dumps(names)}\n"),
    )
)
def test_gate_with_a_bad_policy(folder, text):
    base = fresh(folder)
    (base / "policy.toml").write_text(text)
    (base / "run").mkdir()
    (base / "run" / "verdict.json").write_text('{"valid": true, "checkers": {}}')
    assert_one_line_error(base, ["gate", "run", "--policy", "policy.toml", "--junit", "out/j.xml"], inputs_of(base))
