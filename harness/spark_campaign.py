"""`splitbrain campaign FILE --spark MASTER`: the campaign's runs as Spark
tasks, as many at once as the cluster has cores.

Each run is a Spark job of one task. The task runs it on its executor's
host, with the backend the file names, in a process of its own
(`splitbrain run-settings`) that is told to stop (SIGTERM, as after Ctrl-C:
it heals and tears down) the moment the task's process dies, whether Spark
cancelled the task or its executor was lost; the run's reaper is the
backstop. The run happens in a scratch folder inside Spark's own folder for
the application, which Spark removes.

How a run travels back: the task returns the finished run directory as a
gzipped tar, in its result. The driver unpacks it beside the campaign's
runs under a temporary name and renames it into place. So no shared
filesystem is needed; a run lands whole or not at all; and an attempt that
was lost (its executor killed) lands nothing: Spark runs the task again
elsewhere (`spark.task.maxFailures`), and only the attempt that finishes
lands, so every run is there exactly once.

What guides later runs travels the same way: a guided run starts with the
coverage of the runs finished so far, a novelty run with what the campaign
has learned so far, and what each learned is added when it lands. Runs in
flight together do not see each other's coverage, as they could not.

`runs_per_host` caps the runs sharing one host (Docker runs are heavy): a
task takes one of that many slots on its host first, an abstract Unix
socket (host-wide, gone with the process that held it, no file left).
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import hashlib
import io
import json
import os
import re
import shutil
import signal
import socket
import sys
import tarfile
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from harness.processes import descendants, names
from history.errors import ClusterError, UsageError

if TYPE_CHECKING:
    from harness.campaign import PlannedRun, Steer

SLOT_WAIT_S = 0.5
PR_SET_PDEATHSIG = 1
# Runs in flight at most, whatever the cluster's cores (a thread each waits on its job).
MAX_AT_ONCE = 256
TASK_LOG = "task.log"
RUN_COMMAND = "run-settings"
# A run's process as /proc/PID/comm names it (what waits for runs to end look for).
RUN_NAME = "splitbrain-run"
PR_SET_NAME = 15
# How long a cancelled run may take to heal and tear down before Spark, stopping, removes its folder.
HEALING_S = 60.0


class SparkCampaignError(UsageError):
    """A run that could not be run on Spark; the message names the run."""


@dataclass(frozen=True)
class Task:
    """What an executor needs for one run: its settings (as run.json's
    config), what guides it, and its host's slots."""

    run_id: str
    settings: dict
    coverage: str | None
    memory: str | None
    slots: str
    per_host: int | None


def run_task(task: Task) -> dict:
    """On the executor: the run in a scratch folder; its directory as a
    gzipped tar, and what it learned. A run the command refused (its
    settings, an error of ours) is returned as `error`, not retried; a run
    whose process was killed raises, so that Spark runs it again."""
    from pyspark import SparkFiles

    scratch = Path(tempfile.mkdtemp(prefix=f"{task.run_id}-", dir=SparkFiles.getRootDirectory())).resolve()
    try:
        settings = {**task.settings, "results": str(scratch), "progress": False}
        for key, text in (("coverage_file", task.coverage), ("memory_file", task.memory)):
            if settings.get(key) is not None:
                settings[key] = str(scratch / Path(settings[key]).name)
                if text:  # "": nothing learned yet
                    Path(settings[key]).write_text(text)
        (scratch / "settings.json").write_text(json.dumps(settings))
        with host_slot(task.slots, task.per_host):
            code = _run_beside(scratch)
        run_dir = scratch / task.run_id
        if not (run_dir / "verdict.json").exists():
            last = _last_line(scratch / TASK_LOG)
            if code < 0:
                raise ClusterError(f"{task.run_id}: its process was killed ({signal.Signals(-code).name}): {last}")
            return {"run_id": task.run_id, "error": last}
        memory = Path(settings["memory_file"]).read_text() if settings.get("memory_file") else None
        return {"run_id": task.run_id, "tar": _tar(run_dir), "memory": memory}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _run_beside(scratch: Path) -> int:
    """`splitbrain run-settings` in a process of its own, forked from this
    one (its modules already loaded: a new interpreter's imports cost a
    second of CPU a run), in its own session, named RUN_NAME, and sent
    SIGTERM when this process dies; its exit code."""
    from harness import cli, run  # noqa: F401  (loaded before the fork, once per Python worker)
    from results import checking, report  # noqa: F401

    parent = os.getpid()
    pid = os.fork()
    if pid == 0:  # the run's process: never returns
        code = 2
        try:
            os.setsid()
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(PR_SET_NAME, RUN_NAME.encode())
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
            if os.getppid() != parent:  # the task died before prctl
                os.kill(os.getpid(), signal.SIGTERM)
            log = os.open(scratch / TASK_LOG, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
            for fd in (1, 2):
                os.dup2(log, fd)
            sys.stdout = sys.stderr = open(1, "w", buffering=1, closefd=False)
            os.chdir(scratch)
            code = cli.main([RUN_COMMAND, str(scratch / "settings.json")])
        except BaseException:
            traceback.print_exc()
        finally:
            sys.stdout.flush()
            os._exit(code)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


def _last_line(path: Path) -> str:
    lines = [line for line in path.read_text(errors="replace").splitlines() if line.strip()]
    return lines[-1] if lines else "no output"


def _tar(run_dir: Path) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", compresslevel=1) as tar:
        tar.add(run_dir, arcname=run_dir.name)
    return buffer.getvalue()


@contextlib.contextmanager
def host_slot(name: str, per_host: int | None):
    """One of `per_host` slots on this host (None: no limit), held until the block ends."""
    if per_host is None:
        yield
        return
    while True:
        for index in range(per_host):
            slot = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                slot.bind(f"\0{name}-{index}")
            except OSError:
                slot.close()
                continue
            with slot:
                yield
            return
        time.sleep(SLOT_WAIT_S)


def land(folder: Path, result: dict) -> Path:
    """A task's run directory unpacked under the campaign folder: whole, under a temporary name first."""
    final = folder / result["run_id"]
    landing = Path(tempfile.mkdtemp(prefix=".landing-", dir=folder))
    try:
        with tarfile.open(fileobj=io.BytesIO(result["tar"]), mode="r:gz") as tar:
            tar.extractall(landing, filter="data")
        (landing / result["run_id"]).rename(final)
    finally:
        shutil.rmtree(landing, ignore_errors=True)
    return final


class SparkRunner:
    """The campaign's runs on a Spark cluster; `runs` yields each plan as its
    run lands (campaign.py's loop does the rest, as for serial runs)."""

    def __init__(self, master: str, per_host: int | None, progress: Callable[[str], None]) -> None:
        self.master = master
        self.per_host = per_host
        self.say = progress
        self.said = 0

    def runs(self, folder: Path, planned: list[PlannedRun], steer: Steer) -> Iterator[PlannedRun]:
        from results.spark_session import session

        spark = session(self.master, folder / "spark.log", app="campaign")
        sc = spark.sparkContext
        pool = ThreadPoolExecutor(MAX_AT_ONCE)
        try:
            yield from self._keep_busy(sc, pool, folder, planned, steer)
        finally:  # cancelled first: the threads wait on their jobs
            sc.cancelAllJobs()
            pool.shutdown(cancel_futures=True)
            healed_here()
            spark.stop()

    def _cores(self, sc) -> int:
        """The cluster's cores now: its executors register one by one after
        the session starts, so this grows; each change is said."""
        cores = sc.defaultParallelism
        registered = self.master.startswith("local") or sc._jsc.sc().getExecutorMemoryStatus().size() > 1
        if registered and cores != self.said:
            self.said = cores
            self.say(f"spark: {self.master}: {cores} cores: up to {cores} runs at once")
            if self.per_host is not None and cores < self.per_host:
                self.say(f"spark: the cluster has {cores} cores, fewer than runs_per_host ({self.per_host})")
        return cores

    def _keep_busy(self, sc, pool, folder: Path, planned: list, steer: Steer) -> Iterator:
        from harness.campaign import MEMORY_FILE, aims, finished, learns, set_aside

        memory = CampaignMemory(folder / MEMORY_FILE)
        running: dict[Future, tuple[PlannedRun, str | None]] = {}
        index = 0
        while True:
            while len(running) < min(self._cores(sc), MAX_AT_ONCE):
                if index == len(planned) and steer.more() is None:
                    break
                plan = planned[index]
                index += 1
                if finished(folder / plan.run_id):
                    yield plan
                    continue
                config = plan.config
                coverage = steer.tried().read_text() if aims(config) else None
                learned = memory.text() if learns(config) else None
                task = Task(
                    plan.run_id, _settings(config, coverage, learned), coverage, learned, _slots(folder), self.per_host
                )
                running[pool.submit(_one_job, sc, task)] = (plan, learned)
            if not running:
                return
            done, _ = wait(running, timeout=1.0, return_when=FIRST_COMPLETED)  # and cores registered since
            for future in done:
                plan, learned = running.pop(future)
                result = _result(plan.run_id, future)
                set_aside(folder, plan.run_id)
                land(folder, result)
                memory.add(learned, result.get("memory"))
                yield plan


def healed_here(timeout_s: float = HEALING_S) -> None:
    """Until the runs this process's own executor started (`local[N]`) have
    healed and ended, told to by their tasks' end: stopping Spark removes
    the folder they heal in."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and RUN_NAME in names(descendants(os.getpid())):
        time.sleep(0.2)


def _settings(config, coverage: str | None, memory: str | None) -> dict:
    """The run's settings as run.json's config holds them; the files that guide it named, not yet written."""
    from harness.campaign import COVERAGE_FILE, MEMORY_FILE

    config = dataclasses.replace(
        config,
        coverage_file=Path(COVERAGE_FILE) if coverage is not None else None,
        memory_file=Path(MEMORY_FILE) if memory is not None else None,
    )
    return {k: str(v) if isinstance(v, Path) else v for k, v in dataclasses.asdict(config).items()}


def _slots(folder: Path) -> str:
    """The name of this campaign's slots on any host."""
    return f"splitbrain-campaign-{hashlib.sha256(str(folder.resolve()).encode()).hexdigest()[:16]}"


def _one_job(sc, task: Task) -> dict:
    sc.setJobGroup(task.run_id, f"splitbrain campaign run {task.run_id}", interruptOnCancel=True)
    return sc.parallelize([task], 1).map(run_task).collect()[0]


def _result(run_id: str, future: Future) -> dict:
    """A task's result, or one line naming the run and why it could not be run."""
    try:
        result = future.result()
    except Exception as error:  # py4j's Py4JJavaError: every attempt failed; its last Python line says why
        found = re.findall(r"^\w*(?:Error|Exception): .*$", str(error), re.MULTILINE)
        raise SparkCampaignError(f"{run_id}: failed on Spark: {found[-1] if found else type(error).__name__}") from None
    if "error" in result:
        raise SparkCampaignError(f"{run_id}: {result['error']}")
    return result


class CampaignMemory:
    """The campaign's novelty memory on the driver: each run starts from it
    as it is, and what the run learned beyond that is added when it lands."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def text(self) -> str:
        """What the campaign has learned, or "" for nothing yet."""
        return self.path.read_text() if self.path.exists() else ""

    def add(self, before: str | None, after: str | None) -> None:
        from nemesis.novelty import Memory as Learned

        if before is None or after is None:
            return
        campaign = Learned.read(self.path)
        campaign.add(*(Learned.from_json(json.loads(text)) if text else Learned() for text in (before, after)))
        campaign.write(self.path)
