"""A standalone Spark cluster on this machine's loopback: pyspark's own
master and workers (`spark-class`), what the tests and benchmarks run
campaigns, simulations and `analyze` on when they want real executors
rather than `local[N]`: separate JVMs that can be killed one at a time.

Everything they write (logs, work and scratch folders, the JVMs' temporary
files) is under the folder given; killed, they leave nothing in /tmp.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pyspark

from harness.ports import free_port
from harness.processes import descendants
from history.errors import ClusterError

REGISTERED = b"Successfully registered with master"
START_TIMEOUT_S = 120.0


class StandaloneSpark:
    """A master and `workers` workers of `cores` cores each (one executor
    each, for an application that asks nothing else), in `folder`.
    A context manager: on exit every JVM and whatever it started is killed."""

    def __init__(self, folder: Path, workers: int = 1, cores: int = 1, memory: str = "1g") -> None:
        self.folder = Path(folder)
        self.home = Path(pyspark.__file__).parent
        self.port = free_port()
        self.url = f"spark://127.0.0.1:{self.port}"
        self.specs = [(cores, memory)] * workers
        self.started: list[subprocess.Popen] = []
        self.workers: list[subprocess.Popen] = []

    def __enter__(self) -> StandaloneSpark:
        scratch = self.folder / "jvm-tmp"
        scratch.mkdir(parents=True, exist_ok=True)
        self.env = {
            **os.environ,
            "SPARK_HOME": str(self.home),
            "SPARK_LOCAL_IP": "127.0.0.1",
            "SPARK_LOCAL_DIRS": str(scratch),
            "SPARK_DAEMON_JAVA_OPTS": f"-Djava.io.tmpdir={scratch}",
            "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false",
        }
        try:
            self._start("master", "org.apache.spark.deploy.master.Master", "--port", str(self.port))
            for index, (cores, memory) in enumerate(self.specs):
                self.workers.append(self._worker(index, cores, memory))
            for index in range(len(self.workers)):
                self._wait_registered(index)
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc) -> None:
        for process in self.started:
            kill_group(process)
        self.started.clear()

    def _start(self, name: str, main: str, *args: str) -> subprocess.Popen:
        with open(self.folder / f"{name}.log", "wb") as log:
            process = subprocess.Popen(
                [str(self.home / "bin" / "spark-class"), main, "--host", "127.0.0.1", "--webui-port", str(free_port())]
                + list(args),
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.started.append(process)
        return process

    def _worker(self, index: int, cores: int, memory: str) -> subprocess.Popen:
        work = self.folder / f"work-{index}"
        return self._start(
            f"worker-{index}",
            "org.apache.spark.deploy.worker.Worker",
            *("--cores", str(cores), "--memory", memory, "--work-dir", str(work), self.url),
        )

    def _wait_registered(self, index: int) -> None:
        log = self.folder / f"worker-{index}.log"
        deadline = time.monotonic() + START_TIMEOUT_S
        while REGISTERED not in log.read_bytes():
            if self.workers[index].poll() is not None or time.monotonic() > deadline:
                raise ClusterError(f"Spark worker {index} did not register: {log}")
            time.sleep(0.5)

    def worker_processes(self, index: int) -> set[tuple[int, int]]:
        """The pids of worker `index`'s JVM and everything it started (its
        executor, the Python daemon and workers, and what they ran)."""
        return descendants(self.workers[index].pid)

    def kill_worker(self, index: int) -> set[tuple[int, int]]:
        """SIGKILL worker `index`'s JVM alone, as a machine's crash would
        end it; returns the pids that were its process tree before."""
        tree = self.worker_processes(index)
        self.workers[index].send_signal(signal.SIGKILL)
        self.workers[index].wait()
        return tree


def kill_group(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()
