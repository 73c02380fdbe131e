"""A campaign's summary.html, where its runs ran more than one version of
the target's server (`versions`): a table of versions by the checkers that
failed, each cell the runs of that version the checker failed."""

from __future__ import annotations

import json
import re

from results.campaign_page import write_summary


def run(folder, name: str, version: str | None, failed: list[str]):
    run_dir = folder / name
    run_dir.mkdir()
    (run_dir / "run.json").write_text(json.dumps({"server_version": version}))
    checkers = {c: {"valid": c not in failed, "anomalies": [{"summary": "x"}]} for c in ("linearizable", "progress")}
    (run_dir / "verdict.json").write_text(json.dumps({"valid": not failed, "checkers": checkers}))
    return ("set", run_dir)


def rows_of(page: str) -> list[list[str]]:
    table = page.split("<h2>Versions</h2>")[1].split("</table>")[0]
    return [re.findall(r"<t[dh]>([^<]*)</t[dh]>", row) for row in table.split("<tr>")[1:]]


def test_the_versions_table_counts_each_checkers_failures_per_version(tmp_path):
    runs = [
        run(tmp_path, "a", "2.12.1", ["linearizable"]),
        run(tmp_path, "b", "2.12.1", []),
        run(tmp_path, "c", "2.9.10", ["linearizable", "progress"]),
        run(tmp_path, "d", "2.15.1", []),
    ]
    page = write_summary(tmp_path, runs).read_text()
    assert rows_of(page) == [
        ["version", "runs", "linearizable", "progress"],
        ["2.9.10", "1", "1", "1"],
        ["2.12.1", "2", "1", "0"],
        ["2.15.1", "1", "0", "0"],
    ]


def test_one_version_needs_no_table(tmp_path):
    page = write_summary(tmp_path, [run(tmp_path, "a", "2.9.10", ["progress"])]).read_text()
    assert "<h2>Versions</h2>" not in page
