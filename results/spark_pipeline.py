"""`splitbrain analyze ARCHIVE`: the archive re-checked and summarised on
Spark (PySpark; `local[*]` unless `--master` names a cluster).

Runs are checked in Spark tasks, a few batches of runs per core: each
run's files are checked against the manifest's checksums, then `check_run`
re-checks it with the checkers of `splitbrain check`. A checker so has one
definition, run in-process by `check` and on Spark's executors by
`analyze`; runs are independent, so a run is the unit of work, and the
batches are balanced by bytes so that no core waits on one at the end.
(Restating each checker as Spark group-bys and joins over all runs at once,
as this module did before, ran at 93k rows/s on 2 cores: every rule became a
shuffle of every row. Tasks of whole runs need no shuffle; a run must fit in
one executor's memory, about 2 GiB per 7M rows.) Then the summaries, as
Spark aggregations over the index: failure rate per target option set and
nemesis, availability figures, verdicts that differ across seeds or repeats
of one configuration (flaky), runs whose archived verdict the re-check
contradicts, Good–Turing's chance that one more run hits a new coverage
cell (per option set), and the coverage cells of every run's faults added up per
option set (what the archive never tried).

A corrupt or partial entry is named and left out of the analysis, and the
command then exits 2 (1 is for failing runs).
"""

from __future__ import annotations

import contextlib
import heapq
import json
import time
from pathlib import Path

import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from checkers.registry import NAMES
from checkers.signatures import group

from . import archive as archive_
from .checking import check_run
from .recording import HistoryError
from .spark_session import collected, session

SAFETY = tuple(name for name in NAMES if name != "availability")
CONFIG_COLUMNS = [
    "option_set",
    "target",
    "server_version",
    "bugs",
    "options",
    "workload",
    "nemesis",
    "nodes",
    "time_limit_s",
]
# A run's rows each carry its failure group (checkers/signatures.py's `group`; None for a run that did not fail).
VERDICT_COLUMNS = ["run_id", "checker", "valid", "kinds", "failure_group"]
RECHECKED_SCHEMA = ", ".join(f"{name} string" for name in VERDICT_COLUMNS)


def recheck(store: str, run_id: str, entry: dict, budget_s: float) -> tuple[list[dict], list[str]]:
    """One run's rows of the re-check (one per safety checker that applies),
    or, for a run whose files are not those the manifest lists, its problems."""
    problems = archive_.verify_run(Path(store), run_id, entry)
    if problems:
        return [], problems
    try:
        verdict = check_run(Path(store) / archive_.RUNS / run_id, budget_s)
    except HistoryError as error:
        return [], [f"{run_id}: {error}"]
    return [
        {
            "run_id": run_id,
            "checker": name,
            "valid": str(result["valid"]).lower(),
            "kinds": ",".join(sorted({a["kind"] for a in result.get("anomalies", []) if a.get("kind")})),
            "failure_group": group(verdict),
        }
        for name, result in verdict["checkers"].items()
        if name in SAFETY
    ], []


def verdicts(
    spark: SparkSession, store: Path, entries: dict[str, dict], budget_s: float, progress=None
) -> tuple[pd.DataFrame, list[str]]:
    """(one row per (run_id, checker): valid and the anomaly kinds found; the
    problems of runs left out). `progress` hears ("re-check", runs done,
    runs in all) as tasks end."""
    batches = balanced(entries, TASKS_PER_CORE * spark.sparkContext.defaultParallelism)
    done = spark.sparkContext.accumulator(0)
    root = str(store)

    def batch(items: list[tuple[str, dict]]) -> list[tuple[list[dict], list[str]]]:
        found = [recheck(root, ident, entry, budget_s) for ident, entry in items]
        done.add(len(items))
        return found

    job = spark.sparkContext.parallelize(batches, len(batches)).flatMap(batch)
    step = progress or (lambda *args: None)
    found = collected(job, lambda: step("re-check", done.value, len(entries)))
    step("re-check", len(entries), len(entries))
    rows = sorted((row for rows, _ in found for row in rows), key=lambda r: (r["run_id"], SAFETY.index(r["checker"])))
    return pd.DataFrame(rows, columns=VERDICT_COLUMNS), [p for _, problems in found for p in problems]


# A Spark task costs about 30 ms besides its work (a run of 5,500 rows is
# checked in 100 ms): a task per run spent a third of the re-check on tasks.
# A few tasks per core, each a batch of runs, keep the cores evenly busy.
TASKS_PER_CORE = 4


def balanced(entries: dict[str, dict], tasks: int) -> list[list[tuple[str, dict]]]:
    """The runs in at most `tasks` batches of about equal bytes: largest run
    first, each to the batch with the fewest bytes so far (so no core waits
    on one large run at the end); each batch largest first."""
    sizes = {ident: sum(f["bytes"] for f in entry["files"].values()) for ident, entry in entries.items()}
    batches: list[list[tuple[str, dict]]] = [[] for _ in range(min(tasks, len(entries)))]
    loads = [(0, 0, k) for k in range(len(batches))]
    for ident in sorted(entries, key=lambda ident: (-sizes[ident], ident)):
        load, count, k = heapq.heappop(loads)
        batches[k].append((ident, entries[ident]))
        heapq.heappush(loads, (load + sizes[ident], count + 1, k))
    return batches


COVERAGE_CELLS = "array<struct<fault:string,role:string,with:string,count:long>>"


def coverage(runs: DataFrame, by: list[str]) -> DataFrame:
    """Every run's coverage cells added up per option set: how often each
    (fault, role hit, what else was going on) was tried, in how many runs."""
    cells = runs.select(*by, "run_id", F.explode(F.from_json("coverage", COVERAGE_CELLS)).alias("cell"))
    return (
        cells.groupBy(*by, "cell.fault", "cell.role", "cell.with")
        .agg(F.sum("cell.count").alias("tried"), F.countDistinct("run_id").alias("runs"))
        .orderBy(*by, "fault", "role", "with")
    )


def saturation(runs: DataFrame, by: list[str]) -> DataFrame:
    """Per option set, Good–Turing's chance that one more run hits a coverage
    cell none of its runs hit (checkers/coverage.py's `unseen_chance`, over
    the archive): the cells hit by exactly one run, per run, at most 1."""
    cells = runs.select(*by, "run_id", F.explode(F.from_json("coverage", COVERAGE_CELLS)).alias("cell"))
    per_cell = cells.groupBy(*by, "cell.fault", "cell.role", "cell.with").agg(F.countDistinct("run_id").alias("hit_by"))
    once = per_cell.groupBy(*by).agg(
        F.count(F.lit(1)).alias("cells"), F.sum(F.when(F.col("hit_by") == 1, 1).otherwise(0)).alias("hit_once")
    )
    return (
        runs.groupBy(*by)
        .agg(F.count(F.lit(1)).alias("runs"))
        .join(once, by, "left")
        .fillna(0, ["cells", "hit_once"])
        .withColumn("unseen_chance", F.least(F.lit(1.0), F.col("hit_once") / F.col("runs")))
        .orderBy(*by)
    )


def failure_groups(runs: DataFrame, rechecked: DataFrame) -> DataFrame:
    """Failing runs grouped by what they failed of first (checkers/signatures.py):
    per group, how many runs, the option sets they came from, the first and
    the last run (by start time); the first is the one to shrink."""
    failing = rechecked.where(F.col("failure_group").isNotNull()).select("run_id", "failure_group").distinct()
    # By start time, then id: a run without a start time (simulated, hand-made) still has a place.
    started = F.struct(F.coalesce(F.col("start_time"), F.lit("")), F.col("run_id"))
    return (
        failing.join(runs.select("run_id", "start_time", "option_set"), "run_id")
        .groupBy("failure_group")
        .agg(
            F.count(F.lit(1)).alias("runs"),
            F.concat_ws(",", F.array_sort(F.collect_set("option_set"))).alias("option_sets"),
            F.min_by("run_id", started).alias("first_run"),
            F.max_by("run_id", started).alias("last_run"),
        )
        .orderBy(F.desc("runs"), "failure_group")
    )


def summaries(spark, index: pd.DataFrame, rechecked: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Failure rates, availability figures, flaky configurations, coverage and
    failure groups, as Spark aggregations over the runs; disagreements with
    the archived verdicts."""
    figures = [
        c for c in ("leaderless_ms", "stuck_ms", "disruptive_elections", "leader_elections", "ok_rate") if c in index
    ]
    runs = spark.createDataFrame(_typed(index, figures))
    checked = spark.createDataFrame(rechecked, RECHECKED_SCHEMA)
    per_run = checked.groupBy("run_id").agg(
        F.max(F.when(F.col("valid") == "false", 1).otherwise(0)).alias("failed"),
        F.concat_ws(",", F.collect_set(F.when(F.col("valid") == "false", F.col("checker")))).alias("failed_checkers"),
    )
    joined = runs.join(per_run, "run_id", "left").cache()
    options = [c for c in ("option_set", "target", "server_version", "bugs", "options", "nemesis") if c in index]
    rates = ["runs", "failed", "failure_rate", "caught_by"]
    spread = [f"{kind}_{c}" for kind in ("mean", "max") for c in figures]
    by_options = _by_options(joined, options, figures)
    config = [c for c in CONFIG_COLUMNS if c in index]
    # Runs of one configuration that differ only by seed or repeat; imported histories are not such runs.
    flaky = (
        joined.where(F.col("target") != "import")
        .groupBy(*config)
        .agg(
            F.count(F.lit(1)).alias("runs"), F.sum("failed").alias("failed"), F.collect_list("run_id").alias("run_ids")
        )
        .where((F.col("failed") > 0) & (F.col("failed") < F.col("runs")))
    )
    found = {
        "coverage": coverage(runs, options[:1]).toPandas() if "coverage" in index else pd.DataFrame(),
        "saturation": saturation(runs, options[:1]).toPandas() if "coverage" in index else pd.DataFrame(),
        "groups": failure_groups(runs, checked).toPandas(),
        "failure_rate": by_options[options + rates],
        "availability": by_options[options + spread],
        "flaky": flaky.toPandas(),
        "disagreements": disagreements(index, rechecked),
    }
    joined.unpersist()
    return found


def _typed(index: pd.DataFrame, figures: list[str]) -> pd.DataFrame:
    """The index as Spark takes it: settings that are true or false stay so
    (not "True" in analysis/*.json), figures are numbers, the rest is text."""
    flags = [
        c
        for c in index.columns
        if c not in figures
        and index[c].map(lambda v: v is None or isinstance(v, bool)).all()
        and index[c].notna().any()
    ]
    texts = [c for c in index.columns if c not in figures and c not in flags]
    table = index[texts].astype(object).where(index[texts].notna(), None).astype(str).where(index[texts].notna(), None)
    table[flags] = index[flags].astype(object).where(index[flags].notna(), None)
    table[figures] = index[figures].astype("float64")
    return table


def _by_options(joined: DataFrame, options: list[str], figures: list[str]) -> pd.DataFrame:
    """Per option set: runs, failures, the checkers that caught them, and the figures' mean and max."""
    return (
        joined.groupBy(*options)
        .agg(
            F.count(F.lit(1)).alias("runs"),
            F.sum("failed").alias("failed"),
            F.avg("failed").alias("failure_rate"),
            F.concat_ws(
                ",",
                F.array_sort(
                    F.array_distinct(
                        F.filter(F.flatten(F.collect_list(F.split("failed_checkers", ","))), lambda c: c != "")
                    )
                ),
            ).alias("caught_by"),
            *[F.avg(c).alias(f"mean_{c}") for c in figures],
            *[F.max(c).alias(f"max_{c}") for c in figures],
        )
        .toPandas()
    )


def disagreements(index: pd.DataFrame, rechecked: pd.DataFrame) -> pd.DataFrame:
    """(run_id, checker, archived, rechecked) where the archived verdict (the
    index's `valid_<checker>`) is not the re-check's."""
    archived = index.melt("run_id", [c for c in index if c.startswith("valid_")], "checker", "archived").dropna()
    archived["checker"] = archived["checker"].str.removeprefix("valid_")
    both = rechecked.merge(archived, on=["run_id", "checker"])
    differ = both[both["archived"] != both["valid"]].rename(columns={"valid": "rechecked"})
    return differ[["run_id", "checker", "archived", "rechecked"]].reset_index(drop=True)


def analyze(
    store: Path, master: str = "local[*]", out: Path | None = None, budget_s: float = 30.0, progress=None
) -> dict:
    """Verify, re-check and summarise; writes the results under `out` (default
    ARCHIVE/analysis). `progress` hears each stage's name (and, during the
    re-check, runs done and in all); `timings` gives each stage's seconds."""
    store = Path(store)
    if not (store / archive_.MANIFEST).is_file():
        raise archive_.ArchiveError(f"{store}: not an archive (no {archive_.MANIFEST})")
    manifest = archive_.read_manifest(store)
    problems = archive_.unlisted(store, manifest)
    index = (
        pd.read_parquet(store / archive_.INDEX) if (store / archive_.INDEX).exists() else pd.DataFrame({"run_id": []})
    )
    out = Path(out or store / "analysis")
    out.mkdir(parents=True, exist_ok=True)
    step = progress or (lambda *args: None)
    timings: dict[str, float] = {}
    rechecked = pd.DataFrame(columns=VERDICT_COLUMNS)
    results = {
        name: pd.DataFrame() for name in ("coverage", "saturation", "groups", "failure_rate", "availability", "flaky")
    }
    results["disagreements"] = pd.DataFrame(columns=["run_id", "checker", "archived", "rechecked"])
    if manifest["runs"]:  # else nothing to analyse: say so, without Spark
        with _stage("spark session", step, timings):
            spark = session(master, out / "spark.log")
        with _stage("re-check", step, timings):
            rechecked, broken = verdicts(spark, store, manifest["runs"], budget_s, step)
        problems = sorted(broken) + problems
        sound = set(manifest["runs"]) - {p.split(":")[0] for p in broken}
        index = index[index["run_id"].isin(sound)].reset_index(drop=True)
        if len(index):
            with _stage("summaries", step, timings):
                results = summaries(spark, index, rechecked)
    results["groups"] = triaged(results["groups"], store, out / "groups.json")
    rechecked.to_parquet(out / "verdicts.parquet", index=False)
    for name, table in results.items():
        table.to_json(out / f"{name}.json", orient="records", indent=1, default_handler=str)
    return {"problems": problems, "verdicts": rechecked, **results, "out": out, "timings": timings}


def triaged(groups: pd.DataFrame, store: Path, earlier: Path) -> pd.DataFrame:
    """The failure groups with what a person does next: the command that
    shrinks each group's first run, and whether the group is `new` (not
    among those of the analysis before, written where this one goes)."""
    try:
        known = {row["failure_group"] for row in json.loads(earlier.read_text())}
    except (OSError, ValueError, TypeError, KeyError):
        known = None  # no analysis before: nothing to be new against
    if groups.empty:
        return pd.DataFrame(columns=["failure_group", "runs", "option_sets", "first_run", "last_run", "shrink", "new"])
    return groups.assign(
        shrink=[f"splitbrain shrink {store / archive_.RUNS / run}" for run in groups["first_run"]],
        new=[known is not None and name not in known for name in groups["failure_group"]],
    )


@contextlib.contextmanager
def _stage(name: str, step, timings: dict):
    """A stage of `analyze`: announced to `step`, its seconds kept in `timings`."""
    step(name)
    started = time.perf_counter()
    yield
    timings[name] = time.perf_counter() - started
