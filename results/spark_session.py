"""The Spark session that `analyze`, `campaign --spark` and `simulate
--spark` share: pyspark's own (`local[*]`, or a cluster's master URL), its
Python workers on this interpreter, the driver on loopback when the cluster
is, and the JVM's chatter kept off the terminal."""

from __future__ import annotations

import contextlib
import os
import re
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait
from pathlib import Path
from urllib.parse import urlsplit

from pyspark.sql import SparkSession

# The master URLs Spark takes (its "Master URLs"); anything else fails deep in Spark's start-up.
SPARK_MASTER = re.compile(
    r"local(\[(\*|[1-9][0-9]*)(,[0-9]+)?\])?|local-cluster\[[0-9]+,[0-9]+,[0-9]+\]"
    r"|(spark|mesos|k8s)://\S+|yarn"
)
MASTER_FORMS = "local, local[N], local[*], spark://HOST:PORT, yarn, k8s://URL, mesos://HOST:PORT"


def master_problem(master: str) -> str | None:
    """Why `master` is not a Spark master URL, or None."""
    return None if SPARK_MASTER.fullmatch(master) else f"not a Spark master URL ({MASTER_FORMS})"


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


def session(master: str = "local[*]", log: Path | None = None, app: str = "analyze") -> SparkSession:
    """A Spark session named `splitbrain-APP`; with `log`, the JVM's output goes there."""
    with jvm_output_to(log):
        return _session(master, app)


def _session(master: str, app: str) -> SparkSession:
    # Python workers run this interpreter, which has splitbrain and pandas.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.master(master)
    if _on_loopback(master):  # nothing to reach from outside: the driver listens on loopback only
        builder = builder.config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    spark = (
        builder.appName(f"splitbrain-{app}")
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


POLL_S = 0.5


def collected(job, report: Callable[[], None]) -> list:
    """`job.collect()`, with `report()` called every POLL_S while it runs
    (tasks count what they did in an accumulator, which the driver reads)."""
    with ThreadPoolExecutor(1) as pool:
        result = pool.submit(job.collect)
        while not wait([result], timeout=POLL_S).done:
            report()
        return result.result()
