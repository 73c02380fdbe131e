"""The `splitbrain` command as a user runs it: verdict on stdout, exit code by verdict."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from harness.limits import LULL_FROM_S, LULL_S
from harness.run import RunConfig
from history.errors import SettingError


def splitbrain(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness.cli", *args], capture_output=True, text=True, timeout=300)


def test_simulate_passes_the_correct_node():
    result = splitbrain("simulate", "--schedules", "5", "--quiet")
    assert result.returncode == 0, result.stderr
    verdict = json.loads(result.stdout)
    assert verdict["valid"] is True and verdict["checkers"]["simulation-invariants"]["stats"]["schedules"] == 5
    assert result.stderr.strip().splitlines()[-1] == "valid: True  (5 schedules, 0 violations)"


def test_simulate_fails_a_planted_bug_and_names_the_seed():
    result = splitbrain("simulate", "--schedules", "20", "--quiet", "--bug", "stale-read")
    assert result.returncode == 1
    anomaly = json.loads(result.stdout)["checkers"]["simulation-invariants"]["anomalies"][0]
    assert "stale read" in anomaly["violation"] and isinstance(anomaly["seed"], int)
    assert f"1 violation; first: {anomaly['violation']} (seed {anomaly['seed']}, shrunk to " in result.stderr


def test_bad_options_are_one_line_errors():
    result = splitbrain("simulate", "--bug", "no-such-bug")
    assert result.returncode == 2 and "no-such-bug" in result.stderr


def test_runs_are_guided_by_default_and_churn_names_the_random_strategy(tmp_path):
    assert RunConfig().nemesis_strategy == "guided" and "clock" in RunConfig().nemesis
    RunConfig(nemesis=[]).validate()  # `--nemesis none`: load without faults
    RunConfig(nemesis=["churn"], nemesis_strategy="random").validate()
    result = splitbrain("run", "--nemesis", "partition,churn", "--results", str(tmp_path / "runs"))
    assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
    assert (
        "--nemesis: the guided strategy aims" in result.stderr
        and "(--nemesis-strategy random draws churn)" in result.stderr
    )
    assert not (tmp_path / "runs").exists()


def test_node_reports_an_unusable_data_dir(tmp_path):
    (tmp_path / "generation").write_text("garbage")
    result = splitbrain(
        "node",
        "--id",
        "n1",
        "--data-dir",
        str(tmp_path),
        "--raft-listen",
        "127.0.0.1:0",
        "--client-listen",
        "127.0.0.1:0",
    )
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0 and "generation: corrupt" in result.stderr


def test_check_reads_a_crashed_runs_jsonl_and_finds_a_stale_read(tmp_path):
    from results.recording import HistoryRecorder

    recorder = HistoryRecorder(tmp_path)
    for process, f, value, result in ((0, "write", 1, 1), (0, "write", 2, 2), (1, "read", None, 1)):
        recorder.record(process, "invoke", f, key="k", value=value)
        recorder.record(process, "ok", f, key="k", value=result)
    recorder.file.flush()  # no close, no parquet: the harness "crashed"
    result = splitbrain("check", str(tmp_path))
    assert result.returncode == 1, result.stdout + result.stderr
    assert "linearizable: False" in result.stdout
    assert json.loads((tmp_path / "verdict.json").read_text())["valid"] is False


ROW = '{"index": 0, "time_ns": 1, "process": 0, "type": "invoke", "f": "read", "key": "k"}'


def test_check_names_a_corrupt_history_line(tmp_path):
    (tmp_path / "history.jsonl").write_text(f"{ROW}\n{{oops\n{ROW}\n")
    result = splitbrain("check", str(tmp_path))
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith(f"error   {tmp_path}: {tmp_path / 'history.jsonl'}: line 2: ")


def test_a_torn_last_line_is_a_warning_counted_in_the_verdict(tmp_path):
    (tmp_path / "history.jsonl").write_text(f"{ROW}\n{ROW[:30]}")
    result = splitbrain("check", str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert f"warning: {tmp_path / 'history.jsonl'}: line 2: torn last line left out" in result.stderr
    verdict = json.loads((tmp_path / "verdict.json").read_text())
    assert verdict["stats"] == {"history_rows": 1, "torn_lines": 1} and "line 2" in verdict["warnings"][0]


def test_one_broken_run_of_many_is_reported_and_the_rest_checked(tmp_path):
    """Knossos's mongodb-v0-ack-rollback- holds nemesis operations only; a
    run beside it is broken. Both get their line; the batch exits 2."""
    edn = (
        Path(__file__).parents[2]
        / ".."
        / "shared"
        / "data"
        / "knossos-histories"
        / "good"
        / "mongodb-v0-ack-rollback-.edn"
    )
    if not edn.exists():
        edn = (
            Path(__file__).parents[1]
            / "data"
            / "outside"
            / "knossos-histories"
            / "good"
            / "mongodb-v0-ack-rollback-0.edn"
        )
    imported = splitbrain(
        "import", "--format", "jepsen-edn", "--model", "cas-register", "--to", str(tmp_path), str(edn)
    )
    assert imported.returncode == 0, imported.stderr
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "history.jsonl").write_text(f"{{oops\n{ROW}\n")
    result = splitbrain("check", "--quiet", str(tmp_path))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stdout.startswith("true ") and result.stderr.startswith(f"error   {tmp_path / 'broken'}:")
    assert (tmp_path / edn.stem / "report.html").exists()


def test_every_option_of_every_command_is_described():
    from harness.cli import build_parser

    commands = build_parser()._subparsers._group_actions[0].choices
    undescribed = [
        f"{name} {' '.join(action.option_strings) or action.dest}"
        for name, parser in commands.items()
        if parser.add_help
        for action in parser._actions
        if not action.help and action.dest != "help"
    ]
    assert undescribed == []


def test_help_shows_no_default_for_a_flag_and_names_pages_that_exist():
    """`--no-pre-vote ... (default: True)` read as the opposite of the flag;
    `campaign --help` named a README section that is not there."""
    from harness.cli import build_parser

    root = Path(__file__).parents[2]
    named = []
    for name, parser in build_parser()._subparsers._group_actions[0].choices.items():
        if not parser.add_help:
            continue
        text = parser.format_help()
        assert "(default: True)" not in text and "(default: False)" not in text, name
        assert "README, " not in text, name
        for page in re.findall(r"docs/[\w-]+\.md", text):
            named.append(page)
            assert (root / page).is_file(), (name, page)
    assert "docs/campaigns.md" in named


def test_shrink_and_replay_refuse_what_they_cannot_use_in_one_line(tmp_path):
    runs = {}
    for name, valid in (("passing", True), ("failing", False)):
        runs[name] = tmp_path / name
        runs[name].mkdir()
        (runs[name] / "run.json").write_text(json.dumps({"config": {"nemesis": []}, "seed": 1, "schedule": []}))
        (runs[name] / "verdict.json").write_text(
            json.dumps({"valid": valid, "checkers": {"linearizable": {"valid": valid}}})
        )
    for args, message in [
        (["shrink", str(runs["passing"])], "nothing to shrink"),
        (["shrink", "--to", str(tmp_path / "no" / "x.toml"), str(runs["failing"])], "--to"),
        (["shrink", "--to", str(tmp_path), str(runs["failing"])], "a folder; name the campaign file"),
        (["replay", str(tmp_path / "nowhere")], "cannot read"),
        (["shrink", str(tmp_path)], "cannot read"),
    ]:
        done = splitbrain(*args)
        assert done.returncode == 2 and len(done.stderr.splitlines()) == 1 and message in done.stderr, (
            args,
            done.stderr,
        )


def one_line_error(result: subprocess.CompletedProcess, words: str) -> None:
    assert result.returncode == 2 and words in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "internal error" not in result.stderr, result.stderr


def test_empty_and_repeated_values_are_refused_before_anything_is_made(tmp_path):
    """`--results ""` wrote into the repository root, `--nemesis ""` and
    `",,,"` made no faults, and repeated names were taken silently."""
    runs = tmp_path / "runs"
    one_line_error(splitbrain("run", "--results", ""), "an empty path")
    one_line_error(splitbrain("run", "--nemesis", "", "--results", str(runs)), "names no fault")
    one_line_error(splitbrain("run", "--nemesis", ",,,", "--results", str(runs)), "names no fault")
    one_line_error(splitbrain("run", "--nemesis", "kill,kill", "--results", str(runs)), "kill named more than once")
    one_line_error(
        splitbrain("run", "--bug", "stale-read", "--bug", "stale-read", "--results", str(runs)),
        "--bug: stale-read named more than once",
    )
    one_line_error(splitbrain("run", "--nemesis", "nosuch", "--results", str(runs)), "unknown faults nosuch")
    assert "--nemesis-strategy random draws" not in splitbrain("run", "--nemesis", "nosuch").stderr
    one_line_error(splitbrain("run", "--toxiproxy", "garbage", "--results", str(runs)), "--toxiproxy: expected")
    one_line_error(splitbrain("check", str(tmp_path / "nonexistent")), "nonexistent: no such file or folder")
    assert "--toxiproxy: --toxiproxy" not in splitbrain("run", "--toxiproxy", "garbage").stderr
    assert not runs.exists()


def test_a_long_enough_run_ends_in_a_lull_and_a_lull_as_long_as_the_run_is_refused(tmp_path):
    """A run of LULL_FROM_S or more ends in LULL_S healed with no load (its
    settings say so); a shorter one, a schedule given (a replay states its
    run's lull) and a run recorded before the lull have none; a lull
    that leaves no load, or a schedule operation inside it, is one line."""
    long = RunConfig(time_limit_s=LULL_FROM_S)
    assert (long.lull_s, long.load_s) == (LULL_S, LULL_FROM_S - LULL_S)
    assert RunConfig(time_limit_s=LULL_FROM_S - 1).lull_s == 0
    assert RunConfig(time_limit_s=30, schedule=[]).lull_s == 0
    assert RunConfig.from_json({"time_limit_s": 30}).lull_s == 0
    runs = tmp_path / "runs"
    one_line_error(
        splitbrain("run", "--time-limit", "5", "--lull", "5", "--results", str(runs)), "--lull: 5 must be under"
    )
    heal = {"at_s": 28.0, "f": "heal-all", "args": {}}
    with pytest.raises(SettingError) as refused:
        RunConfig(time_limit_s=30, lull_s=4, schedule=[heal]).validate()
    assert refused.value.setting == "schedule" and "before its lull" in refused.value.reason
    assert not runs.exists()


def test_etcd_on_one_node_takes_the_faults_one_node_can_take():
    """It was `Sample larger than population` (an internal error)."""
    config = RunConfig(target="etcd", nodes=1)
    config.validate()
    assert config.nemesis and "partition" not in config.nemesis
    try:
        RunConfig(target="etcd", nodes=1, nemesis=["partition"]).validate()
    except SettingError as error:
        assert error.setting == "nemesis" and "one node has none" in error.reason
    else:
        raise AssertionError("a partition of one node was taken")


def test_gate_and_analyze_name_their_bad_options_in_one_line(tmp_path):
    runs, policy = tmp_path / "runs", tmp_path / "policy.toml"
    (runs / "r").mkdir(parents=True)
    (runs / "r" / "verdict.json").write_text('{"valid": true, "checkers": {"linearizable": {"valid": true}}}')
    policy.write_text('required = ["linearizable"]\n')
    one_line_error(splitbrain("gate", str(runs), "--policy", str(policy), "--junit", str(tmp_path)), "--junit")
    archive = tmp_path / "archive"
    archive.mkdir()
    (archive / "manifest.json").write_text('{"runs": {}}')
    (tmp_path / "taken").write_text("mine")
    one_line_error(splitbrain("analyze", str(archive), "--out", str(tmp_path / "taken")), "--out")
    one_line_error(splitbrain("analyze", str(archive), "--master", "garbage://x"), "not a Spark master URL")
    assert (tmp_path / "taken").read_text() == "mine" and not (archive / "analysis").exists()


def test_a_crash_leaves_its_traceback_in_the_folder_the_command_wrote_in(tmp_path, monkeypatch):
    from harness import crash

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    run_dir = tmp_path / "run.partial"
    run_dir.mkdir()
    crash.write_here(run_dir)
    try:
        raise RuntimeError("a bug of ours")
    except RuntimeError:
        in_run = crash.log()
    assert in_run.parent == run_dir and "a bug of ours" in in_run.read_text()
    run_dir.rename(tmp_path / "run")  # its verdict gave it its final name
    try:
        raise RuntimeError("a later bug")
    except RuntimeError:
        renamed = crash.log()
    crash.write_here(tmp_path / "never-made")
    try:
        raise RuntimeError("no run")
    except RuntimeError:
        elsewhere = crash.log()
    assert renamed.parent == tmp_path / "run" and elsewhere.parent == tmp_path / "state" / "splitbrain"


@pytest.mark.parametrize("nemesis", [["partition"], ["kill"], None])
def test_the_links_are_cut_as_the_target_can_take_it(nemesis):
    """etcd on Docker was refused unless --net iptables was given; an
    explicit --net proxy is refused whatever the faults (with the default
    faults it ran, quietly narrowed to none that cut links)."""
    assert RunConfig(target="etcd", backend="docker").net == "iptables"
    assert RunConfig(target="kraft", backend="docker").net == "proxy" and RunConfig(target="etcd").net == "proxy"
    RunConfig(target="etcd", backend="docker", nemesis=["partition", "kill"]).validate()
    with pytest.raises(SettingError) as refused:
        RunConfig(target="etcd", backend="docker", net="proxy", nemesis=nemesis).validate()
    assert refused.value.setting == "net"
    assert refused.value.reason.startswith("etcd's members dial one advertised peer URL")


def test_a_run_in_which_no_fault_was_made_says_so(tmp_path):
    """`--time-limit 3` leaves no turn for a fault (only heal-all): the verdict
    and the console say "no fault was made", and no coverage cell is added."""
    done = splitbrain("run", "--time-limit", "3", "--quiet", "--results", str(tmp_path))
    assert done.returncode == 0, done.stderr
    [run_dir] = tmp_path.iterdir()
    verdict = json.loads((run_dir / "verdict.json").read_text())
    assert verdict["faults_made"] == 0 and verdict["note"] == "no fault was made" and verdict["coverage"]["cells"] == []
    assert "valid: True, no fault was made" in done.stdout
    checked = splitbrain("check", str(run_dir))
    assert "no fault was made" in checked.stdout


def test_output_cut_short_by_its_reader_is_no_internal_error(tmp_path):
    """`splitbrain check runs/* | head -3` ended in an internal error and a crash log (BrokenPipeError)."""
    from checkers.models import cas_register
    from results.importer import import_file

    knossos = Path(__file__).parents[1] / "data" / "outside" / "knossos-histories" / "good"
    runs = tmp_path / "runs"
    for history in sorted(knossos.glob("*.edn"))[:30]:
        import_file(history, "jepsen-edn", cas_register(0), runs)
    done = subprocess.run(
        f"{sys.executable} -m harness.cli check --quiet {runs} | head -1",
        shell=True,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "XDG_STATE_HOME": str(tmp_path / "state")},
    )
    assert len(done.stdout.splitlines()) == 1 and "internal error" not in done.stderr, done.stderr
    assert "Broken pipe" not in done.stderr and not (tmp_path / "state").exists()


def test_a_recorded_schedule_ending_at_the_time_limit_is_taken_again(tmp_path):
    """run.json keeps the schedule on the history's clock, rounded to the
    microsecond; taken back to offsets, the last heal came out at 12.000001
    of a 12 s run, and replay and shrink refused their own run."""
    import dataclasses

    from harness.cli.runs import recorded_run

    config = RunConfig(time_limit_s=12.0, nemesis=["partition"], nemesis_strategy="random")
    meta = {
        "config": {k: str(v) if isinstance(v, Path) else v for k, v in dataclasses.asdict(config).items()},
        "load_start_s": 3.123457,
        "schedule": [{"at_s": 15.123458, "f": "heal-all", "args": {}}],
    }
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "run.json").write_text(json.dumps(meta))
    again = recorded_run(tmp_path / "run", tmp_path / "again", quiet=True)
    assert again.schedule == [{"at_s": 12.0, "f": "heal-all", "args": {}}]


def test_a_recorded_operation_made_before_the_nodes_started_is_made_before_them_again(tmp_path):
    """A replay's latency made before its nodes started (a negative `at_s`)
    is recorded on the history's clock; taken back to an offset it stays
    negative, where one a microsecond early is the start of load."""
    import dataclasses

    from harness.cli.runs import recorded_run

    config = RunConfig(time_limit_s=12.0, nemesis=["latency"], nemesis_strategy="random")
    meta = {
        "config": {k: str(v) if isinstance(v, Path) else v for k, v in dataclasses.asdict(config).items()},
        "load_start_s": 3.123457,
        "schedule": [
            {"at_s": 2.123457, "f": "latency", "args": {"latency_ms": 14}},
            {"at_s": 3.123456, "f": "heal-all", "args": {}},
        ],
    }
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "run.json").write_text(json.dumps(meta))
    again = recorded_run(tmp_path / "run", tmp_path / "again", quiet=True)
    assert [op["at_s"] for op in again.schedule] == [-1.0, 0.0]


def test_only_a_lasting_link_fault_is_made_before_the_nodes_start(tmp_path):
    """A node fault cannot be made on nodes not yet started: a schedule
    that puts one at a negative `at_s` is refused in one line, before the run."""
    run_dir = tmp_path / "given"
    run_dir.mkdir()
    ops = [{"at_s": -1.0, "f": "kill", "args": {"nodes": ["n1"]}}]
    config = {"nemesis_strategy": "random", "nemesis": ["kill"], "time_limit_s": 5}
    (run_dir / "run.json").write_text(json.dumps({"config": config, "schedule": ops}))
    done = subprocess.run(
        [sys.executable, "-m", "harness.cli", "replay", str(run_dir), "--results", str(tmp_path / "again")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    said = "schedule: only a lasting link fault (partition, latency, bandwidth, message-loss) is made before the nodes start"
    assert done.returncode == 2 and said in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert not (tmp_path / "again").exists()


def test_a_replay_goes_beside_the_campaigns_runs_not_among_them(tmp_path):
    """`replay` put its run in the folder of the run it replayed, and a gate
    over a campaign's folder then counted one run more."""
    from results.recording import find_run_dirs

    folder = tmp_path / "campaign"
    done = splitbrain("run", "--time-limit", "3", "--nemesis", "kill", "--quiet", "--results", str(folder))
    assert done.returncode == 0, done.stderr
    [original] = find_run_dirs([folder])
    replayed = splitbrain("replay", "--quiet", str(original))
    assert replayed.returncode == 0 and "reproduced" in replayed.stdout, replayed.stdout + replayed.stderr
    assert find_run_dirs([folder]) == [original]
    assert len(find_run_dirs([folder / f"replay-{original.name}"])) == 1


def test_a_refusal_names_no_other_target_and_a_bound_as_typed():
    """NATS's clock refusal said "Go programs such as etcd"; the seed's bound printed as 9.22337e+18."""
    with pytest.raises(SettingError) as refused:
        RunConfig(target="nats", nemesis=["clock"]).validate()
    assert refused.value.reason.startswith("nats takes no clock faults") and "etcd" not in refused.value.reason
    one_line_error(splitbrain("run", "--seed", str(2**64)), "must be at most 9223372036854775807, not")
