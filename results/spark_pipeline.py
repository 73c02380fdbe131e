"""`splitbrain analyze ARCHIVE`: the archive re-checked and summarised on
Spark (PySpark; `local[*]` unless `--master` names a cluster).

Every run's tables are read at once, tagged with their run id, and the safety
checkers run as Spark jobs over all runs together: group-bys and joins per
(run, ...), not a Python loop per run. They are the pandas checkers of
checkers/ restated (same rules, same applicability), and the tests hold their
verdicts equal. Linearizability runs per (run, key) group in parallel with
the pandas checker inside (`applyInPandas`). Then the summaries: failure rate
per target option set and nemesis, availability figures, verdicts that differ
across seeds or repeats of one configuration (flaky), and runs whose archived
verdict the re-check contradicts, and the coverage cells of every run's
faults added up per option set (what the archive never tried).

The archive is verified first: a corrupt or partial entry is named and left
out of the analysis, and the command then exits 2 (1 is for failing runs).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from urllib.parse import urlsplit

import pandas as pd
from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from checkers.elections import VOTER_SETS
from checkers.mutex import LOCK_FS

from . import archive as archive_
from checkers.schema import EVENTS_COLUMNS, FINAL_COLUMNS, HISTORY_COLUMNS
from .history import conforms, normalise

SAFETY = ("election-safety", "single-leader-per-epoch", "committed-data-loss", "membership", "mutual-exclusion",
          "linearizable")  # fmt: skip
CONFIG_COLUMNS = ["option_set", "target", "bugs", "pre_vote", "check_quorum", "workload", "nemesis", "nodes", "time_limit_s"]
SPARK_TYPES = {"int64": "long", "Int64": "long", "string[pyarrow]": "string", "boolean": "boolean"}


@contextlib.contextmanager
def jvm_output_to(log: Path | None):
    """While the Spark JVM starts, its standard error (log4j's WARN lines, the
    JVM's own notes) goes to `log` instead of the terminal, where it would
    break into the progress bar: the JVM inherits file descriptor 2 at its
    start and keeps it. Our own stderr is restored at once."""
    if log is None:
        yield
        return
    log.parent.mkdir(parents=True, exist_ok=True)
    sys.stderr.flush()
    saved = os.dup(2)
    with open(log, "ab") as target:
        os.dup2(target.fileno(), 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def session(master: str = "local[*]", log: Path | None = None) -> SparkSession:
    """A Spark session; with `log`, the JVM's output goes there."""
    with jvm_output_to(log):
        return _session(master)


def _session(master: str) -> SparkSession:
    # Python workers run this interpreter, which has splitbrain and pandas.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.master(master)
    if _on_loopback(master):  # nothing to reach from outside: the driver listens on loopback only
        builder = builder.config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    spark = (
        builder
        .appName("splitbrain-analyze")
        .config("spark.sql.shuffle.partitions", "8")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _on_loopback(master: str) -> bool:
    """`local[...]`, or a cluster whose master is on this machine's loopback."""
    if master.startswith("local"):
        return True
    host = urlsplit(master).hostname or ""
    return host == "localhost" or host.startswith("127.") or host == "::1"


def _schema(columns: dict[str, str]) -> str:
    return ", ".join(f"`{name}` {SPARK_TYPES[dtype]}" for name, dtype in columns.items())


def read_table(spark: SparkSession, store: Path, run_ids: list[str], name: str, columns: dict, scratch: Path) -> DataFrame:
    """One table of every run, with its run id; runs without the file add no
    rows. A file in other types than the contract's (a column of Parquet's
    null type, say) is read from a copy in the contract's types under `scratch`."""
    paths = []
    for run_id in run_ids:
        path = store / archive_.RUNS / run_id / name
        if path.exists() and not conforms(path, columns):
            copy = scratch / archive_.RUNS / run_id / name
            normalise(path, columns, copy)
            path = copy
        if path.exists():
            paths.append(str(path))
    if not paths:
        return spark.createDataFrame([], f"{_schema(columns)}, run_id string, seq long")
    frame = spark.read.schema(_schema(columns)).parquet(*paths)
    run_id = F.regexp_extract(F.input_file_name(), r"/runs/([^/]+)/[^/]+$", 1)
    # Row order within a file breaks ties in time, as the stable sorts of the pandas checkers do.
    return frame.withColumn("run_id", run_id).withColumn("seq", F.monotonically_increasing_id())


def election_safety(events: DataFrame, names_vote: list[str] = ()) -> DataFrame:
    """(run_id, kind, count) of the election-safety anomalies; a vote lost
    within its epoch only in `names_vote`'s runs (their targets declare
    `transitions_name_vote`)."""
    votes = events.where(F.col("event") == "vote").select("run_id", "node", "epoch", "candidate", "time_ns", "directory_id")
    own = events.where((F.col("event") == "transition") & (F.col("state") == "candidate")).select(
        "run_id", "node", "epoch", F.col("node").alias("candidate"), "time_ns", "directory_id"
    )
    ballots = votes.unionByName(own).dropna(subset=["epoch", "candidate"])
    double = (
        ballots.groupBy("run_id", "node", "epoch").agg(F.countDistinct("candidate").alias("n")).where("n > 1")
        .select("run_id", F.lit("double-vote").alias("kind"))
    )  # fmt: skip
    replica = F.coalesce(F.col("directory_id"), F.lit(""))
    ordered = Window.partitionBy("run_id", "source", "node", replica).orderBy("time_ns", "seq")
    back = (
        events.dropna(subset=["epoch"]).withColumn("previous", F.lag("epoch").over(ordered))
        .where(F.col("epoch") < F.col("previous")).select("run_id", F.lit("epoch-went-back").alias("kind"))
    )  # fmt: skip
    everyone = events.dropna(subset=["node"]).groupBy("run_id").agg(
        (F.floor(F.countDistinct("node") / 2) + 1).alias("everyone")
    )
    # The majority of the voter set in force at each leader: its latest `voters` event.
    sets = events.where(F.col("event").isin(*VOTER_SETS) & (F.col("source") == "log")).dropna(subset=["voters"]).select(
        "run_id", "node", "time_ns", "seq", F.lit(None).cast("long").alias("epoch"),
        (F.floor(F.size(F.from_json("voters", "array<array<string>>")) / 2) + 1).alias("set_majority"),
    )  # fmt: skip
    elected = events.where((F.col("event") == "transition") & (F.col("state") == "leader")).select(
        "run_id", "node", "time_ns", "seq", "epoch", F.lit(None).cast("long").alias("set_majority")
    )
    in_force = Window.partitionBy("run_id", "node").orderBy("time_ns", "seq").rowsBetween(Window.unboundedPreceding, 0)
    leaders = (
        elected.unionByName(sets).withColumn("in_force", F.last("set_majority", ignorenulls=True).over(in_force))
        .where(F.col("epoch").isNotNull()).dropDuplicates(["run_id", "node", "epoch"])
        .join(votes.select("run_id", "epoch").distinct(), ["run_id", "epoch"])
        .join(everyone, "run_id").withColumn("majority", F.coalesce("in_force", "everyone"))
        .select("run_id", "node", "epoch", "majority")
    )  # fmt: skip
    granted = votes.groupBy("run_id", "epoch", F.col("candidate").alias("node")).agg(
        F.countDistinct(F.col("node")).alias("granted")
    )
    short = (
        leaders.join(granted, ["run_id", "epoch", "node"], "left")
        .where(F.coalesce("granted", F.lit(0)) + 1 < F.col("majority"))
        .select("run_id", F.lit("leader-without-majority").alias("kind"))
    )  # fmt: skip
    prevoted = (
        events.where((F.col("event") == "prevote") & F.col("leader").isNotNull())
        .select("run_id", F.lit("prevote-while-following").alias("kind"))
    )  # fmt: skip
    found = double.unionByName(back).unionByName(short).unionByName(prevoted)
    if names_vote:
        found = found.unionByName(_votes_forgotten(events.where(F.col("run_id").isin(list(names_vote))), ballots))
    return _counts(found)


def _votes_forgotten(events: DataFrame, ballots: DataFrame) -> DataFrame:
    """A replica's transition naming no vote in an epoch after it voted in it."""
    replica = F.coalesce(F.col("directory_id"), F.lit("")).alias("replica")
    voted = (
        ballots.select("run_id", "node", "epoch", replica, "time_ns").groupBy("run_id", "node", "epoch", "replica")
        .agg(F.min("time_ns").alias("voted_ns"))
    )  # fmt: skip
    moves = events.where((F.col("event") == "transition") & (F.col("source") == "log") & F.col("voted_for").isNull())
    lost = (
        moves.select("run_id", "node", "epoch", replica, "time_ns").join(voted, ["run_id", "node", "epoch", "replica"])
        .where(F.col("time_ns") > F.col("voted_ns")).select("run_id", "node", "epoch", "replica").distinct()
    )  # fmt: skip
    return lost.select("run_id", F.lit("vote-forgotten").alias("kind"))


def single_leader_per_epoch(events: DataFrame, history: DataFrame, ok_proves_nothing: list[str] = ()) -> DataFrame:
    """Claims from events, from the leader named in any client reply, and from
    `ok` replies except in runs whose target declares they prove nothing."""
    replies = history.where((F.col("process") >= 0) & (F.col("type") != "invoke"))
    acks = replies.where(F.col("type") == "ok")
    if ok_proves_nothing:
        acks = acks.where(~F.col("run_id").isin(list(ok_proves_nothing)))
    claims = (
        events.where(F.col("state") == "leader").select("run_id", "epoch", F.col("node").alias("claimed"))
        .unionByName(events.select("run_id", "epoch", F.col("leader").alias("claimed")))
        .unionByName(replies.select("run_id", "epoch", F.col("leader").alias("claimed")))
        .unionByName(acks.select("run_id", "epoch", F.col("node").alias("claimed")))
        .dropna(subset=["epoch", "claimed"])
    )  # fmt: skip
    two = claims.groupBy("run_id", "epoch").agg(F.countDistinct("claimed").alias("n")).where("n > 1")
    return _counts(two.select("run_id", F.lit("two-leaders").alias("kind")))


def committed_data_loss(history: DataFrame, final: DataFrame, events: DataFrame) -> DataFrame:
    """(run_id, kind, count) for runs with appends; kind `unknown` when acknowledged
    appends exist but no final log was read."""
    appends = history.where((F.col("f") == "append") & (F.col("process") >= 0))
    # A record's place is (key, offset); unkeyed appends (one log) have key "".
    place = F.coalesce(F.col("key"), F.lit("")).alias("key")
    acked = appends.where(F.col("type") == "ok").dropna(subset=["offset"]).select("run_id", "index", place, "offset", "value")
    failed = appends.where(F.col("type") == "fail").select("run_id", "value")
    records = final.dropna(subset=["offset"]).select("run_id", "node", place, "offset", F.col("value").alias("found"))
    nodes = records.select("run_id", "node").distinct()
    lost = (
        acked.join(nodes, "run_id").join(records, ["run_id", "node", "key", "offset"], "left")
        .where(F.col("found").isNull() | (F.col("found") != F.col("value")))
        .select("run_id", F.lit("lost-acknowledged-append").alias("kind"))
    )  # fmt: skip
    divergent = (
        records.groupBy("run_id", "key", "offset").agg(F.countDistinct("found").alias("n")).where("n > 1")
        .select("run_id", F.lit("divergent-committed-logs").alias("kind"))
    )  # fmt: skip
    appended = records.where(~F.coalesce(F.col("found"), F.lit("")).startswith("{"))
    duplicate = (
        appended.groupBy("run_id", "node", "found").count().where("count > 1")
        .select("run_id", F.lit("duplicate-append").alias("kind"))
    )  # fmt: skip
    resurrected = failed.join(appended.select("run_id", F.col("found").alias("value")).distinct(), ["run_id", "value"])
    resurrected = resurrected.select("run_id", F.lit("failed-append-committed").alias("kind"))
    truncated = (
        events.where(F.col("event") == "truncate").dropna(subset=["offset", "hwm"])
        .where(F.col("offset") < F.col("hwm")).select("run_id", F.lit("truncated-committed").alias("kind"))
    )  # fmt: skip
    found = _counts(lost.unionByName(divergent).unionByName(duplicate).unionByName(resurrected).unionByName(truncated)
                    .unionByName(_earlier_generations_counted(events)))  # fmt: skip
    with_appends = appends.select("run_id").distinct()
    found = found.join(with_appends, "run_id")
    undecided = (
        acked.select("run_id").distinct().join(nodes.select("run_id").distinct(), "run_id", "left_anti")
        .join(found.select("run_id").distinct(), "run_id", "left_anti")
        .select("run_id", F.lit("unknown").alias("kind"), F.lit(1).cast("long").alias("count"))
    )  # fmt: skip
    return found.unionByName(undecided)


def _replicas(events: DataFrame, event: str) -> DataFrame:
    """(run_id, node, epoch, time_ns, replica, generation) of each replica an event of this kind names."""
    listed = events.where(F.col("event") == event).dropna(subset=["replicas", "epoch"])
    rows = listed.select("run_id", "node", "epoch", "time_ns",
                         F.explode(F.from_json("replicas", "array<array<string>>")).alias("r"))  # fmt: skip
    return rows.select("run_id", "node", "epoch", "time_ns", F.col("r")[0].alias("replica"),
                       F.col("r")[1].cast("long").alias("generation"))  # fmt: skip


def _earlier_generations_counted(events: DataFrame) -> DataFrame:
    """The generation rule (checkers/data_loss.py): a commit that counted a
    replica's offset from another generation than the one its leader last heard from."""
    heard = _replicas(events, "generation").withColumnRenamed("time_ns", "heard_ns").withColumnRenamed("generation", "later")
    counted = _replicas(events, "commit").join(heard.select("run_id", "node", "epoch").distinct(), ["run_id", "node", "epoch"])
    keys = ["run_id", "node", "epoch", "time_ns", "replica", "generation"]
    return (
        counted.join(heard, ["run_id", "node", "epoch", "replica"]).where(F.col("heard_ns") < F.col("time_ns"))
        .groupBy(*keys).agg(F.max_by("later", "heard_ns").alias("later"))
        .where(F.col("generation") != F.col("later"))
        .select("run_id", F.lit("counted-earlier-generation").alias("kind"))
    )  # fmt: skip


def membership(history: DataFrame, events: DataFrame, final: DataFrame) -> DataFrame:
    """(run_id, kind, count) of the `membership` rules (checkers/membership.py)."""
    logged = events.where(F.col("source") == "log")
    voters = logged.where(F.col("event") == "voters").dropna(subset=["offset", "hwm"])
    life = Window.partitionBy("run_id", "node", "generation").orderBy("time_ns", "seq")
    overlapping = (
        voters.withColumn("previous", F.lag("offset").over(life))
        .where(F.coalesce("state", F.lit("leader")) == "leader")
        .where((F.col("offset") > F.col("previous")) & (F.col("hwm") <= F.col("previous")))
        .select("run_id", F.lit("two-uncommitted-voter-changes").alias("kind"))
    )  # fmt: skip
    early = (
        logged.where((F.col("event") == "voter-change-answered") & F.coalesce("ack_when_committed", F.lit(False)))
        .where(F.col("offset") >= F.col("hwm")).select("run_id", F.lit("voter-change-acknowledged-before-commit").alias("kind"))
    )  # fmt: skip
    old_votes = (
        logged.where(F.col("event").isin("vote", "prevote")).dropna(subset=["as_directory", "directory_id"])
        .where(F.col("as_directory") != F.col("directory_id")).select("run_id", F.lit("vote-under-old-identity").alias("kind"))
    )  # fmt: skip
    in_force = life.rowsBetween(Window.unboundedPreceding, 0)
    sets = logged.where(F.col("event") == "voters").dropna(subset=["voters"]).select(
        "run_id", "node", "generation", "time_ns", "seq", "voters", F.lit(None).cast("string").alias("stands")
    )
    stands = logged.where((F.col("event") == "transition") & (F.col("state") == "candidate")).select(
        "run_id", "node", "generation", "time_ns", "seq", F.lit(None).cast("string").alias("voters"),
        F.col("directory_id").alias("stands"),
    )  # fmt: skip
    listed = F.get(F.filter(F.from_json("set", "array<array<string>>"), lambda v: F.get(v, 0) == F.col("node")), 0)
    old_candidacies = (
        stands.unionByName(sets).withColumn("set", F.last("voters", ignorenulls=True).over(in_force))
        .where(F.col("stands").isNotNull() & F.col("set").isNotNull())
        .where(listed.isNull() | (F.get(listed, 1).isNotNull() & (F.get(listed, 1) != F.col("stands"))))
        .select("run_id", F.lit("vote-under-old-identity").alias("kind"))
    )  # fmt: skip
    acked = history.where((F.col("process") == -1) & F.col("f").isin("add-voter", "remove-voter") & (F.col("type") == "ok"))
    change = F.from_json("value", "struct<node:string, directory_id:string>")
    acked = acked.dropna(subset=["offset"]).select(
        "run_id", "offset",
        F.array(F.split("f", "-")[0], change["node"], change["directory_id"]).alias("wanted"),
    )  # fmt: skip
    records = final.dropna(subset=["offset"]).select(
        "run_id", "node", "offset", F.from_json("value", "struct<change:array<string>>")["change"].alias("change")
    )
    lost = (
        acked.join(records.select("run_id", "node").distinct(), "run_id")
        .join(records, ["run_id", "node", "offset"], "left")
        .where(F.col("change").isNull() | (F.col("change") != F.col("wanted")))
        .select("run_id", F.lit("lost-voter-change").alias("kind"))
    )  # fmt: skip
    return _counts(overlapping.unionByName(early).unionByName(old_votes).unionByName(old_candidacies).unionByName(lost))


def linearizable(history: DataFrame, models: dict[str, dict | None], budget_s: float) -> DataFrame:
    """(run_id, key, valid, anomaly) per (run, key) group, checked in parallel
    by the pandas checker; lock operations are `mutual_exclusion`'s."""
    clients = history.where((F.col("process") >= 0) & ~F.col("f").isin(*LOCK_FS)).drop("seq")
    schema = "run_id string, key string, valid string, anomaly string"
    columns = list(HISTORY_COLUMNS)

    def check(group: pd.DataFrame) -> pd.DataFrame:
        from checkers.linearizable import linearizable as check_history
        from checkers.models import make_model

        run_id = group["run_id"].iloc[0]
        spec = models.get(run_id)
        model = make_model(spec["name"], spec.get("initial")) if spec else None
        table = group[columns].astype(HISTORY_COLUMNS).sort_values("index").reset_index(drop=True)
        verdict = check_history(table, model, budget_s)
        anomaly = json.dumps(verdict["anomalies"][0], default=str) if verdict["anomalies"] else None
        key = group["key"].iloc[0]
        return pd.DataFrame([{"run_id": run_id, "key": None if pd.isna(key) else key,
                              "valid": str(verdict["valid"]).lower(), "anomaly": anomaly}])  # fmt: skip

    return clients.groupBy("run_id", "key").applyInPandas(check, schema)


def mutual_exclusion(history: DataFrame, final: DataFrame) -> DataFrame:
    """(run_id, valid, kinds) per run with lock operations: the pandas checker
    on each run's history and final lists, runs in parallel. A run's holds
    are ordered in time across all its clients, so a run is the unit."""
    lock_runs = history.where(F.col("f").isin(*LOCK_FS)).select("run_id").distinct()
    history_columns, final_columns = list(HISTORY_COLUMNS), list(FINAL_COLUMNS)

    def check(rows: pd.DataFrame, lists: pd.DataFrame) -> pd.DataFrame:
        from checkers.mutex import mutual_exclusion as check_run

        table = rows[history_columns].astype(HISTORY_COLUMNS).sort_values("index").reset_index(drop=True)
        verdict = check_run(table, lists[final_columns].astype(FINAL_COLUMNS))
        kinds = ",".join(sorted({a["kind"] for a in verdict["anomalies"]}))
        return pd.DataFrame([{"run_id": rows["run_id"].iloc[0], "valid": str(verdict["valid"]).lower(), "kinds": kinds}])

    rows = history.join(lock_runs, "run_id").drop("seq").groupBy("run_id")
    lists = final.join(lock_runs, "run_id").drop("seq").groupBy("run_id")
    return rows.cogroup(lists).applyInPandas(check, "run_id string, valid string, kinds string")


def _counts(anomalies: DataFrame) -> DataFrame:
    return anomalies.groupBy("run_id", "kind").agg(F.count(F.lit(1)).alias("count"))


def verdicts(spark, store: Path, run_ids: list[str], models: dict, budget_s: float = 30.0, progress=None,
             scratch: Path = Path("normalised"), ok_proves_nothing: list[str] = (), names_vote: list[str] = ()) -> pd.DataFrame:  # fmt: skip
    """One row per (run_id, checker): valid (true/false/unknown) and the anomaly kinds found."""
    history = read_table(spark, store, run_ids, "history.parquet", HISTORY_COLUMNS, scratch).cache()
    events = read_table(spark, store, run_ids, "events.parquet", EVENTS_COLUMNS, scratch).cache()
    final = read_table(spark, store, run_ids, "final.parquet", FINAL_COLUMNS, scratch)
    step = progress or (lambda name: None)
    found = {}
    step("election-safety")
    found["election-safety"] = election_safety(events, names_vote).toPandas()
    step("single-leader-per-epoch")
    found["single-leader-per-epoch"] = single_leader_per_epoch(events, history, ok_proves_nothing).toPandas()
    step("committed-data-loss")
    found["committed-data-loss"] = committed_data_loss(history, final, events).toPandas()
    step("membership")
    found["membership"] = membership(history, events, final).toPandas()
    with_membership = set(
        events.where(F.col("event") == "voters").select("run_id")
        .union(history.where(F.col("f").isin("add-voter", "remove-voter")).select("run_id"))
        .distinct().toPandas()["run_id"]
    )  # fmt: skip
    step("mutual-exclusion")
    locked = mutual_exclusion(history, final).toPandas().set_index("run_id")
    step("linearizable")
    groups = linearizable(history, models, budget_s).toPandas()
    with_appends = set(history.where(F.col("f") == "append").select("run_id").distinct().toPandas()["run_id"])
    with_clients = set(history.where(F.col("process") >= 0).select("run_id").distinct().toPandas()["run_id"])
    rows = []
    for run_id in run_ids:
        imported = models.get(run_id) is not None
        for checker in SAFETY:
            if imported and checker != "linearizable":
                continue
            if checker == "committed-data-loss" and run_id not in with_appends:
                continue
            if checker == "membership" and run_id not in with_membership:
                continue
            if checker == "mutual-exclusion":
                if run_id not in locked.index:
                    continue
                valid, kinds = locked.at[run_id, "valid"], [k for k in locked.at[run_id, "kinds"].split(",") if k]
            elif checker == "linearizable":
                if run_id not in with_clients or run_id in locked.index:
                    continue
                mine = groups[groups["run_id"] == run_id]
                valid = "false" if (mine["valid"] == "false").any() else "unknown" if (mine["valid"] != "true").any() else "true"
                kinds = sorted(json.loads(a)["kind"] for a in mine["anomaly"].dropna())
            else:
                table = found[checker]
                mine = table[table["run_id"] == run_id]
                kinds = sorted(set(mine["kind"]) - {"unknown"})
                valid = "false" if kinds else "unknown" if len(mine) else "true"
            rows.append({"run_id": run_id, "checker": checker, "valid": valid, "kinds": ",".join(sorted(set(kinds)))})
    return pd.DataFrame(rows, columns=["run_id", "checker", "valid", "kinds"])


COVERAGE_CELLS = "array<struct<fault:string,role:string,with:string,count:long>>"


def coverage(runs: DataFrame, by: list[str]) -> DataFrame:
    """Every run's coverage cells added up per option set: how often each
    (fault, role hit, what else was going on) was tried, in how many runs."""
    cells = runs.select(*by, "run_id", F.explode(F.from_json("coverage", COVERAGE_CELLS)).alias("cell"))
    return (cells.groupBy(*by, "cell.fault", "cell.role", "cell.with")
            .agg(F.sum("cell.count").alias("tried"), F.countDistinct("run_id").alias("runs"))
            .orderBy(*by, "fault", "role", "with"))  # fmt: skip


def summaries(spark, index: pd.DataFrame, rechecked: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Failure rates, availability figures, flaky configurations, disagreements, as Spark aggregations."""
    figures = [c for c in ("leaderless_ms", "disruptive_elections", "leader_elections", "ok_rate") if c in index]
    texts = [c for c in index.columns if c not in figures]
    table = index[texts].astype(object).where(index[texts].notna(), None).astype(str).where(index[texts].notna(), None)
    table[figures] = index[figures].astype("float64")
    runs = spark.createDataFrame(table)
    per_run = spark.createDataFrame(rechecked).groupBy("run_id").agg(
        F.max(F.when(F.col("valid") == "false", 1).otherwise(0)).alias("failed"),
        F.concat_ws(",", F.collect_set(F.when(F.col("valid") == "false", F.col("checker")))).alias("failed_checkers"),
    )
    joined = runs.join(per_run, "run_id", "left")
    options = [c for c in ("option_set", "target", "bugs", "pre_vote", "check_quorum", "nemesis") if c in index]
    failure_rate = joined.groupBy(*options).agg(
        F.count(F.lit(1)).alias("runs"), F.sum("failed").alias("failed"), F.avg("failed").alias("failure_rate"),
        F.concat_ws(",", F.array_sort(F.array_distinct(F.filter(F.flatten(F.collect_list(F.split("failed_checkers", ","))),
                                                                  lambda c: c != "")))).alias("caught_by"),
    )
    availability = joined.groupBy(*options).agg(*[F.avg(c).alias(f"mean_{c}") for c in figures],
                                                *[F.max(c).alias(f"max_{c}") for c in figures])  # fmt: skip
    config = [c for c in CONFIG_COLUMNS if c in index]
    # Runs of one configuration that differ only by seed or repeat; imported histories are not such runs.
    flaky = (
        joined.where(F.col("target") != "import").groupBy(*config).agg(F.count(F.lit(1)).alias("runs"), F.sum("failed").alias("failed"),
                                    F.collect_list("run_id").alias("run_ids"))
        .where((F.col("failed") > 0) & (F.col("failed") < F.col("runs")))
    )  # fmt: skip
    archived = runs.select("run_id", *[F.col(c) for c in index.columns if c.startswith("valid_")])
    rechecked_wide = spark.createDataFrame(rechecked).groupBy("run_id").pivot("checker").agg(F.first("valid"))
    disagreements = []
    archived_pd, rechecked_pd = archived.toPandas().set_index("run_id"), rechecked_wide.toPandas().set_index("run_id")
    for run_id, row in rechecked_pd.iterrows():
        for checker, valid in row.dropna().items():
            before = archived_pd.at[run_id, f"valid_{checker}"] if f"valid_{checker}" in archived_pd else None
            if before is not None and pd.notna(before) and before != valid:
                disagreements.append({"run_id": run_id, "checker": checker, "archived": before, "rechecked": valid})
    return {
        "coverage": coverage(runs, options[:1]).toPandas() if "coverage" in index else pd.DataFrame(),
        "failure_rate": failure_rate.toPandas(),
        "availability": availability.toPandas(),
        "flaky": flaky.toPandas(),
        "disagreements": pd.DataFrame(disagreements, columns=["run_id", "checker", "archived", "rechecked"]),
    }


def analyze(store: Path, master: str = "local[*]", out: Path | None = None, budget_s: float = 30.0,
            progress=None) -> dict:  # fmt: skip
    """Verify, re-check and summarise; writes the results under `out` (default ARCHIVE/analysis)."""
    store = Path(store)
    problems = archive_.verify(store)
    broken = {p.split(":")[0] for p in problems}
    manifest = archive_.read_manifest(store)
    run_ids = sorted(set(manifest["runs"]) - broken)
    index = pd.read_parquet(store / archive_.INDEX) if (store / archive_.INDEX).exists() else pd.DataFrame({"run_id": []})
    index = index[index["run_id"].isin(run_ids)].reset_index(drop=True)
    models = {r: json.loads(m) if isinstance(m, str) else None for r, m in zip(index["run_id"], index.get("model", []))}
    out = Path(out or store / "analysis")
    out.mkdir(parents=True, exist_ok=True)
    step = progress or (lambda name: None)
    if not run_ids:  # nothing sound to analyse: say so, without Spark
        rechecked = pd.DataFrame(columns=["run_id", "checker", "valid", "kinds"])
        results = {name: pd.DataFrame() for name in ("coverage", "failure_rate", "availability", "flaky")}
        results["disagreements"] = pd.DataFrame(columns=["run_id", "checker", "archived", "rechecked"])
    else:
        step("spark session")
        spark = session(master, out / "spark.log")
        scratch = Path(tempfile.mkdtemp(prefix=".normalised-", dir=out))
        try:
            declared = index["ok_proves_leadership"] if "ok_proves_leadership" in index else pd.Series(True, index.index)
            proves_nothing = index.loc[~declared.fillna(True).astype(bool), "run_id"].tolist()
            names_vote = index.loc[index.get("transitions_name_vote", pd.Series(False, index.index)).fillna(False).astype(bool), "run_id"].tolist()
            rechecked = verdicts(spark, store, run_ids, models, budget_s, step, scratch, proves_nothing, names_vote)
            step("summaries")
            results = summaries(spark, index, rechecked)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    rechecked.to_parquet(out / "verdicts.parquet", index=False)
    for name, table in results.items():
        table.to_json(out / f"{name}.json", orient="records", indent=1, default_handler=str)
    return {"problems": problems, "verdicts": rechecked, **results, "out": out}
