"""`splitbrain import`: what each format's records mean, and the error paths:
every bad input is one line naming the file and line, and leaves no run
directory (not even half of one) behind."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from checkers.models import cas_register, kv
from results.importer import import_file
from results.jepsen_formats import ImportFormatError
from tests.harness.test_cli import splitbrain


def edn(tmp_path, text, name="h.edn"):
    path = tmp_path / name
    path.write_text(text)
    return path


def imported(path, fmt="jepsen-edn", model=None, to=None):
    run_dir = import_file(path, fmt, model or cas_register(0), to or path.parent / "runs")
    return run_dir, pd.read_parquet(run_dir / "history.parquet")


def test_edn_vector_becomes_a_run_directory(tmp_path):
    path = edn(
        tmp_path,
        "; a comment\n"
        "[{:process 0, :type :invoke, :f :write, :value 3, :time 10}\n"
        " {:process 0, :type :ok, :f :write, :value 3, :time 20}\n"
        " {:process :nemesis, :type :info, :f :kill, :value nil, :time 25}\n"
        " {:process 1, :type :invoke, :f :cas, :value [3 4], :time 30}\n"
        " {:process 1, :type :fail, :f :cas, :value [3 4], :error :timeout, :time 40}]\n",
    )
    run_dir, history = imported(path)
    assert run_dir == tmp_path / "runs" / "h"
    assert history["time_ns"].tolist() == [10, 20, 25, 30, 40]
    assert history["process"].tolist() == [0, 0, -1, 1, 1]
    assert json.loads(history["value"][3]) == [3, 4]
    # In Jepsen's EDN a fail did not happen: not the cas-mismatch observation.
    assert history["type"][4] == "fail" and history["error"][4] == "timeout"
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["source"]["format"] == "jepsen-edn" and meta["model"] == {"name": "cas-register", "initial": 0}
    assert meta["source"]["file"] == str(path.resolve())


def test_edn_read_of_nil_read_no_value(tmp_path):
    path = edn(
        tmp_path, "[{:process 0, :type :invoke, :f :read, :value nil}\n {:process 0, :type :ok, :f :read, :value nil}]"
    )
    _, history = imported(path)
    assert history["type"].tolist() == ["invoke", "info"] and history["error"][1] == "read-without-value"


def test_one_map_per_line_and_kv_strings(tmp_path):
    path = edn(
        tmp_path,
        '{:process 0, :type :invoke, :f :append, :key "7", :value "x 0 0 y"}\n'
        '{:process 0, :type :ok, :f :append, :key "7", :value "x 0 0 y"}\n',
        "kv.txt",
    )
    _, history = imported(path, model=kv())
    assert history["key"].tolist() == ["7", "7"] and json.loads(history["value"][1]) == "x 0 0 y"
    assert history["time_ns"].tolist() == [0, 1]  # no :time: the order in the file


def test_log_fail_cas_is_a_compare_that_ran(tmp_path):
    path = tmp_path / "etcd_x.log"
    path.write_text(
        "INFO  jepsen.util - 3\t:invoke\t:cas\t[1 4]\n"
        "INFO  jepsen.util - 3\t:fail\t:cas\t[1 4]\n"
        "INFO  jepsen.util - 4 :invoke :read nil\n"
        "INFO  jepsen.util - 4 :fail :read :timed-out\n"
        "INFO  jepsen.util - 5\t:invoke\t:write\t2\n"
        "INFO  jepsen.util - 5\t:info\t:write\t:timed-out\n"
    )
    _, history = imported(path, "jepsen-log", cas_register())
    assert history["error"].tolist()[1::2] == ["cas-mismatch", "timed-out", "timed-out"]
    assert history["type"].tolist()[1::2] == ["fail", "fail", "info"]


@pytest.mark.parametrize(
    "text, fmt, message",
    [
        (
            "[{:process 0, :type :invoke, :f :read, :value nil}\n {:process 0, :type :ok, :f :read :value}]",
            "jepsen-edn",
            "line 2: not EDN",
        ),
        (
            "[{:process 0, :type :invoke, :f :read, :value nil}\n {:process 0, :type :ok, :f :read, :value #{]",
            "jepsen-edn",
            "line 2: not EDN",
        ),
        (
            "[{:process 0, :type :invoke, :f :read, :value nil}\n {:process 0, :type :ok, :f :frob, :value 1}]",
            "jepsen-edn",
            "line 2: unknown :f :frob for the cas-register model",
        ),
        (
            "[{:process 0, :type :invoke, :f :read, :value nil}\n {:process 1, :type :ok, :f :read, :value 1}]",
            "jepsen-edn",
            "line 2: :ok from process 1 with no invocation",
        ),
        (
            "[{:process 0, :type :invoke, :f :read}\n {:process 0, :type :invoke, :f :read}]",
            "jepsen-edn",
            "line 2: process 0 invokes again before completing line 1",
        ),
        (
            "[{:process 0, :type :invoke, :f :read}\n {:process 0, :type :done, :f :read}]",
            "jepsen-edn",
            "line 2: unknown :type :done",
        ),
        (
            "[{:process 0, :type :invoke, :f :read}\n {:process 0, :f :read}]",
            "jepsen-edn",
            "line 2: op map without :type",
        ),
        (
            "INFO  jepsen.util - 1\t:invoke\t:read\tnil\nsomething else\n",
            "jepsen-log",
            "line 2: not a jepsen.util op line",
        ),
        (
            "INFO  jepsen.util - 1\t:invoke\t:read\tnil\nINFO  jepsen.util - 1\t:ok\t:read\t{\n",
            "jepsen-log",
            "line 2: value '{' is not EDN",
        ),
        ("INFO  jepsen.util - 1\t:ok\t:read\t3\n", "jepsen-log", "line 1: :ok from process 1 with no invocation"),
    ],
)
def test_bad_input_is_one_line_naming_file_and_line_and_leaves_nothing(tmp_path, text, fmt, message):
    path = edn(tmp_path, text, "bad.txt")
    with pytest.raises(ImportFormatError) as error:
        import_file(path, fmt, cas_register(0), tmp_path / "runs")
    assert str(error.value).startswith(f"{path}: ") and message in str(error.value), str(error.value)
    assert "\n" not in str(error.value)
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_an_existing_run_directory_is_kept_unless_replaced(tmp_path):
    path = edn(tmp_path, "[{:process 0, :type :invoke, :f :write, :value 1}]")
    imported(path)
    with pytest.raises(ImportFormatError, match="already exists"):
        imported(path)
    import_file(path, "jepsen-edn", cas_register(0), tmp_path / "runs", replace=True)
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == ["h"]


def test_the_command_imports_good_files_and_names_the_bad_one(tmp_path):
    good = edn(
        tmp_path, "[{:process 0, :type :invoke, :f :write, :value 1}\n {:process 0, :type :ok, :f :write, :value 1}]"
    )
    bad = edn(tmp_path, "[{:process 0, :type :ok, :f :write, :value 1}]", "bad.edn")
    done = splitbrain(
        "import",
        "--format",
        "jepsen-edn",
        "--model",
        "cas-register",
        "--initial",
        "0",
        "--to",
        str(tmp_path / "runs"),
        str(good),
        str(bad),
    )
    assert done.returncode == 2
    assert done.stderr.strip() == f"splitbrain: {bad}: line 1: :ok from process 0 with no invocation"
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == ["h"]
    checked = splitbrain("check", str(tmp_path / "runs" / "h"))
    assert checked.returncode == 0 and checked.stdout.startswith("true"), checked.stdout + checked.stderr


def test_run_json_names_the_splitbrain_installed(tmp_path, monkeypatch):
    """Not a hard-coded "0.1.0" whatever version made the run."""
    from results import versions

    monkeypatch.setattr(versions, "version", lambda name: "9.9.9" if name == "splitbrain" else "?")
    run_dir, _ = imported(edn(tmp_path, "[{:process 0, :type :invoke, :f :read, :value nil}]"))
    assert json.loads((run_dir / "run.json").read_text())["versions"]["splitbrain"] == "9.9.9"
