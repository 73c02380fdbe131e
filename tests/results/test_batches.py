"""The re-check's batches (`results/spark_pipeline.balanced`): every run in
exactly one, no more batches than asked, and bytes spread so that no core
waits long on one batch at the end."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from results.spark_pipeline import balanced


def entries(sizes: list[list[int]]) -> dict[str, dict]:
    return {
        f"run-{i:03d}": {"files": {f"f{k}": {"bytes": b} for k, b in enumerate(files)}} for i, files in enumerate(sizes)
    }


SIZES = st.one_of(st.integers(0, 2), st.integers(0, 10**9))  # empty files too


@given(st.lists(st.lists(SIZES, min_size=1, max_size=3), min_size=1, max_size=60), st.integers(1, 16))
def test_each_run_once_and_no_batch_far_above_the_mean(sizes, tasks):
    runs = entries(sizes)
    batches = balanced(runs, tasks)
    placed = [ident for batch in batches for ident, _ in batch]
    assert sorted(placed) == sorted(runs) and len(batches) == min(tasks, len(runs)) and all(batches)
    load = {ident: sum(f["bytes"] for f in entry["files"].values()) for ident, entry in runs.items()}
    loads = [sum(load[ident] for ident, _ in batch) for batch in batches]
    # Greedy on the largest first: no batch exceeds the mean by more than one run.
    assert max(loads) <= sum(loads) / len(batches) + max(load.values())
    # Within a batch, the largest run goes first.
    assert all([load[i] for i, _ in batch] == sorted((load[i] for i, _ in batch), reverse=True) for batch in batches)


def test_runs_of_equal_size_are_dealt_out_evenly():
    assert [len(batch) for batch in balanced(entries([[0]] * 7 + [[5]]), 4)] == [1, 3, 2, 2]
