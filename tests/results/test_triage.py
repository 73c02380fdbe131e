"""Triage's last step (results/spark_pipeline.py's `triaged`), without
Spark: each failure group gets the command that shrinks its first run, and
a group that the analysis before did not have is flagged new; with no
analysis before, none is."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from results.spark_pipeline import triaged

GROUPS = pd.DataFrame(
    {
        "failure_group": [
            "committed-data-loss/lost-acknowledged-append/partition:leader-cut-off",
            "linearizable/not-linearizable/no fault",
        ],
        "runs": [3, 1],
        "option_sets": ["ack-before-commit", "stale-read"],
        "first_run": ["c--a-s1", "c--s-s2"],
        "last_run": ["c--a-s3", "c--s-s2"],
    }
)


def test_groups_get_their_shrink_command_and_the_new_ones_are_flagged(tmp_path):
    store = Path("archive")
    first = triaged(GROUPS, store, tmp_path / "groups.json")
    assert first["shrink"].tolist() == [
        "splitbrain shrink archive/runs/c--a-s1",
        "splitbrain shrink archive/runs/c--s-s2",
    ]
    assert not first["new"].any()  # nothing to be new against
    first.iloc[:1].to_json(tmp_path / "groups.json", orient="records")
    again = triaged(GROUPS, store, tmp_path / "groups.json")
    assert again["new"].tolist() == [False, True]
    assert json.loads((tmp_path / "groups.json").read_text())[0]["failure_group"] == GROUPS["failure_group"][0]


def test_no_failing_run_is_no_group(tmp_path):
    none = triaged(GROUPS.iloc[:0], Path("archive"), tmp_path / "groups.json")
    assert none.empty and {"shrink", "new"} <= set(none.columns)
