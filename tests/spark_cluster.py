"""Spark as it runs where a pipeline runs, on this machine, for the tests: a standalone cluster (a
master and workers, each its own JVM, whose executors are JVMs of their own), a PySpark driver
of that cluster in a Python process of its own, and a Spark Connect server.

Everything is started from the installed pyspark (its ``bin/spark-class`` and
``bin/spark-submit``: pyspark's package directory is a usable ``SPARK_HOME``), listens on
127.0.0.1 only, keeps its files in a directory the caller gives, and is stopped by a context
manager, its process group killed, whatever happened. Every wait has a deadline.

Why the driver is a process of its own: PySpark allows one ``SparkContext`` per Python process,
and the test session may already hold one (``conftest.py``'s ``local[2]`` session, kept for the
whole session); the driver of the cluster must be a new one, configured for the cluster.

Nothing here imports looseleaf but :func:`connector_jar` (conftest's connector, built once).
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def spark_environment(**extra: str) -> dict[str, str]:
    """The environment of every Spark process started here: this Python for the Python workers,
    127.0.0.1 for every address, no native library named by the environment (the connector must
    load the one its jar carries)."""
    env = {
        k: v for k, v in os.environ.items() if k not in ("LOOSELEAF_NATIVE_LIBRARY", "PYSPARK_GATEWAY_PORT")
    }
    env.update(
        SPARK_HOME=str(spark_home()),
        SPARK_LOCAL_IP="127.0.0.1",
        SPARK_LOCAL_HOSTNAME="127.0.0.1",
        PYSPARK_PYTHON=sys.executable,
        PYSPARK_DRIVER_PYTHON=sys.executable,
        SPARK_DAEMON_MEMORY="512m",
    )
    env.update(extra)
    return env


def wait_until(condition: Callable[[], Any], timeout: float, what: str, interval: float = 0.2) -> Any:
    """Polls ``condition`` until it returns something true (returned), or raises ``TimeoutError``
    saying ``what`` was awaited."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"waited {timeout:g} s for {what}")
        time.sleep(interval)


_JAR: list[tuple[Path | None, str | None]] = []


def connector_jar(tmp_path_factory: Any) -> tuple[Path | None, str | None]:
    """``conftest._jvm_connector``'s answer (the wheel's jar, else a debug build of this checkout;
    or why there is none), computed once per test session for the modules that use it here."""
    if not _JAR:
        from conftest import _jvm_connector

        _JAR.append(_jvm_connector(tmp_path_factory))
    return _JAR[0]


# --- processes ----------------------------------------------------------------------------------


@dataclass
class SparkProcess:
    """A JVM started here, leader of its own process group, its output in ``log``."""

    name: str
    process: subprocess.Popen
    log: Path

    @property
    def pid(self) -> int:
        return self.process.pid

    def alive(self) -> bool:
        return self.process.poll() is None

    def tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def check_alive(self) -> None:
        if not self.alive():
            raise RuntimeError(
                f"{self.name} exited with status {self.process.returncode}; its log ({self.log}) ends:\n"
                + self.tail()
            )

    def stop(self, timeout: float = 20) -> None:
        """Stops the process group: SIGTERM, then SIGKILL after ``timeout``."""
        _stop_group(self.process, timeout)


def _stop_group(process: subprocess.Popen | multiprocessing.process.BaseProcess, timeout: float) -> None:
    """Ends a process group whose leader is ``process``: SIGTERM to the leader (a worker stops
    its executors, a driver its JVM), up to ``timeout`` seconds for it and then a few more for
    the rest of its group to exit, then SIGKILL to whatever is left."""
    pid = process.pid
    if pid is None:
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGTERM)
    if isinstance(process, subprocess.Popen):
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=timeout)
    else:
        process.join(timeout)
    with contextlib.suppress(TimeoutError):
        wait_until(lambda: not _group_alive(pid), 10, f"process group {pid} to exit")
    # A leader that had not made its group yet is killed by itself.
    for kill in (os.killpg, os.kill):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            kill(pid, signal.SIGKILL)
    if isinstance(process, subprocess.Popen):
        process.wait(timeout=30)
    else:
        process.join(30)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # Members that are zombies (dead, their parent not yet told) count as gone.
    return any(not _ended(p.pid) for p in _processes() if _pgid(p.pid) == pgid)


def _start(name: str, command: list[str], directory: Path, env: dict[str, str]) -> SparkProcess:
    directory.mkdir(parents=True, exist_ok=True)
    log = directory / f"{name}.log"
    with open(log, "ab") as out:
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=directory,
            start_new_session=True,
        )
    return SparkProcess(name, process, log)


# --- a standalone cluster -----------------------------------------------------------------------


EXECUTOR_CLASS = "org.apache.spark.executor.CoarseGrainedExecutorBackend"


@dataclass
class ExecutorProcess:
    """An executor JVM (``CoarseGrainedExecutorBackend``) of an application, a worker's child."""

    pid: int
    app_id: str
    executor_id: str
    worker_pid: int


@dataclass
class StandaloneCluster:
    """A running standalone master and its workers."""

    master: SparkProcess
    workers: list[SparkProcess]
    master_port: int
    webui_port: int
    work_dirs: list[Path]
    timeout: float = 120

    @property
    def master_url(self) -> str:
        return f"spark://127.0.0.1:{self.master_port}"

    def state(self) -> dict:
        """The master's state, as its web UI serves it at ``/json``."""
        url = f"http://127.0.0.1:{self.webui_port}/json/"
        with urllib.request.urlopen(url, timeout=10) as response:
            return json.load(response)

    def alive_workers(self) -> int:
        try:
            state = self.state()
        except OSError:
            return 0
        return sum(1 for w in state.get("workers", []) if w.get("state") == "ALIVE")

    def executors(self, app_id: str | None = None) -> list[ExecutorProcess]:
        """The executor JVMs the workers run now (of ``app_id``, or of every application)."""
        return executor_processes([w.pid for w in self.workers], app_id)

    def kill_executor(self, app_id: str, executor_id: str | None = None) -> ExecutorProcess:
        """SIGKILLs an executor JVM of ``app_id`` (see :func:`kill_executor`)."""
        return kill_executor([w.pid for w in self.workers], app_id, executor_id)

    def executor_directories(self, app_id: str) -> list[Path]:
        """The work directories of the application's executors (``<work>/<app>/<executor>``)."""
        return sorted(p for d in self.work_dirs for p in (d / app_id).glob("*") if p.is_dir())

    def wait_until_registered(self) -> None:
        """Waits until every worker has registered with the master (``timeout`` seconds at most)."""

        def registered() -> bool:
            self.check_alive()
            return self.alive_workers() == len(self.workers)

        try:
            wait_until(registered, self.timeout, f"{len(self.workers)} workers to register", interval=0.5)
        except TimeoutError as e:
            raise TimeoutError(f"{e}\n{self.logs()}") from None

    def check_alive(self) -> None:
        for process in [self.master, *self.workers]:
            process.check_alive()

    def logs(self) -> str:
        return "\n".join(f"--- {p.name} ({p.log})\n{p.tail(15)}" for p in [self.master, *self.workers])


@contextlib.contextmanager
def standalone_cluster(
    directory: Path,
    workers: int = 2,
    cores: int = 1,
    memory: str = "2g",
    timeout: float = 120,
    wait: bool = True,
) -> Iterator[StandaloneCluster]:
    """A standalone master and ``workers`` workers on 127.0.0.1, each a JVM of its own with its
    own work directory under ``directory``, registered with the master before this yields
    (unless ``wait`` is false: then call :meth:`StandaloneCluster.wait_until_registered`, after
    doing something else while the JVMs start); stopped (process groups, executors included)
    when the block ends, however it ends."""
    directory = Path(directory)
    bin_spark_class = str(spark_home() / "bin" / "spark-class")
    env = spark_environment()
    started: list[SparkProcess] = []
    try:
        master_port, webui_port = free_port(), free_port()
        master = _start(
            "master",
            [
                bin_spark_class,
                "org.apache.spark.deploy.master.Master",
                "--host",
                "127.0.0.1",
                "--port",
                str(master_port),
                "--webui-port",
                str(webui_port),
            ],
            directory / "master",
            env,
        )
        started.append(master)
        work_dirs = []
        for n in range(workers):
            work = directory / f"worker-{n}"
            work_dirs.append(work / "work")
            (work / "local").mkdir(parents=True, exist_ok=True)
            worker = _start(
                f"worker-{n}",
                [
                    bin_spark_class,
                    "org.apache.spark.deploy.worker.Worker",
                    f"spark://127.0.0.1:{master_port}",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(free_port()),
                    "--webui-port",
                    str(free_port()),
                    "--cores",
                    str(cores),
                    "--memory",
                    memory,
                    "--work-dir",
                    str(work / "work"),
                ],
                work,
                # Executors' scratch space (shuffle files, blocks) stays in the worker's directory.
                {**env, "SPARK_LOCAL_DIRS": str(work / "local")},
            )
            started.append(worker)
        cluster = StandaloneCluster(master, started[1:], master_port, webui_port, work_dirs, timeout)
        if wait:
            cluster.wait_until_registered()
        yield cluster
    finally:
        # Workers first (their executors are their children, in their process group), master last.
        for process in reversed(started):
            process.stop()


# --- processes, from /proc ----------------------------------------------------------------------


def executor_processes(worker_pids: list[int], app_id: str | None = None) -> list[ExecutorProcess]:
    """The executor JVMs (``CoarseGrainedExecutorBackend``) that the workers ``worker_pids`` run
    now, of ``app_id`` or of every application. Usable in a driver process: plain ``/proc``."""
    workers = set(worker_pids)
    found = []
    for process in _processes():
        if process.parent in workers and EXECUTOR_CLASS in process.command:
            app = _argument(process.command, "--app-id")
            executor = _argument(process.command, "--executor-id")
            if app is not None and executor is not None and (app_id is None or app == app_id):
                found.append(ExecutorProcess(process.pid, app, executor, process.parent))
    return sorted(found, key=lambda e: (len(e.executor_id), e.executor_id))


def kill_executor(worker_pids: list[int], app_id: str, executor_id: str | None = None) -> ExecutorProcess:
    """SIGKILLs an executor JVM of ``app_id`` (``executor_id``, else the first found), as a lost
    machine would end it, and waits until it is gone (its worker reaps it)."""
    candidates = [
        e
        for e in executor_processes(worker_pids, app_id)
        if executor_id is None or e.executor_id == executor_id
    ]
    if not candidates:
        raise RuntimeError(f"no executor {executor_id or ''} of {app_id} is running")
    victim = candidates[0]
    os.kill(victim.pid, signal.SIGKILL)
    wait_until(lambda: _ended(victim.pid), 30, f"executor {victim.executor_id} (pid {victim.pid}) to end")
    return victim


@dataclass
class _Proc:
    pid: int
    parent: int
    command: list[str]


def _processes() -> Iterator[_Proc]:
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes().split(b"\0")
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # The command's name (in parentheses) may hold spaces: the fields after it are fixed.
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        yield _Proc(int(entry.name), parent, [c.decode(errors="replace") for c in command if c])


def _argument(args: list[str], name: str) -> str | None:
    for i, arg in enumerate(args[:-1]):
        if arg == name:
            return args[i + 1]
    return None


def _pgid(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[2])
    except (OSError, ValueError, IndexError):
        return None


def _ended(pid: int) -> bool:
    """Whether the process is gone or a zombie (dead, not yet reaped by its parent)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def process_environment(pid: int) -> dict[str, str]:
    """The environment a process was started with."""
    raw = Path(f"/proc/{pid}/environ").read_bytes()
    pairs = (item.decode(errors="replace").partition("=") for item in raw.split(b"\0") if item)
    return {k: v for k, _, v in pairs}


def process_command(pid: int) -> list[str]:
    return [c.decode(errors="replace") for c in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0") if c]


# --- a driver in a process of its own -----------------------------------------------------------


class DriverError(RuntimeError):
    """A call failed in the driver process; the message holds its traceback there."""


class Driver:
    """A PySpark driver in a child Python process (see the module documentation): ``call(fn,
    *args)`` runs ``fn(spark, *args)`` there and returns its result. ``fn`` must be a function
    a module defines (it is pickled by reference) and its result picklable: plain data, rows."""

    def __init__(self, process: multiprocessing.process.BaseProcess, connection: Any) -> None:
        self.process = process
        self.connection = connection
        self._lock = threading.Lock()

    def call(self, fn: Callable[..., Any], *args: Any, timeout: float = 300) -> Any:
        with self._lock:
            if not self.process.is_alive():
                raise DriverError(f"the driver process exited (status {self.process.exitcode})")
            self.connection.send((fn, args))
            deadline = time.monotonic() + timeout
            while not self.connection.poll(0.5):
                if not self.process.is_alive():
                    raise DriverError(
                        f"the driver process died during {fn.__name__} (status {self.process.exitcode})"
                    )
                if time.monotonic() > deadline:
                    # The driver is stuck: its state is unknown, so it is ended.
                    _stop_group(self.process, 5)
                    raise TimeoutError(f"{fn.__name__} did not finish within {timeout:g} s in the driver")
            status, value = self.connection.recv()
        if status == "error":
            raise DriverError(f"{fn.__name__} failed in the driver:\n{value}")
        return value


@contextlib.contextmanager
def spark_driver(
    make_session: Callable[..., Any], *args: Any, directory: Path, timeout: float = 180
) -> Iterator[Driver]:
    """A driver process whose session is ``make_session(*args)`` (a module-level function,
    called there); stopped with its JVM when the block ends."""
    context = multiprocessing.get_context("spawn")
    parent, child = context.Pipe()
    env = spark_environment(SPARK_LOCAL_DIRS=str(Path(directory) / "local"))
    Path(directory, "local").mkdir(parents=True, exist_ok=True)
    process = context.Process(target=_driver_main, args=(child, env, make_session, args), daemon=False)
    process.start()
    child.close()
    try:
        if not parent.poll(timeout):
            raise TimeoutError(f"the driver did not start within {timeout:g} s")
        status, value = parent.recv()
        if status == "error":
            raise DriverError(f"the driver's session did not start:\n{value}")
        yield Driver(process, parent)
    except EOFError:
        raise DriverError(f"the driver process exited at start (status {process.exitcode})") from None
    finally:
        # The driver stops its session and waits for its JVM; whatever is left then is killed.
        with contextlib.suppress(OSError):
            parent.send(None)
        parent.close()
        process.join(60)
        _stop_group(process, 10)


def _driver_main(connection: Any, env: dict[str, str], make_session: Callable[..., Any], args: tuple) -> None:
    # A process group of its own, with the JVM PySpark starts, for the parent to end at once.
    os.setsid()
    os.environ.clear()
    os.environ.update(env)
    try:
        try:
            spark = make_session(*args)
        except BaseException:
            connection.send(("error", _short_traceback()))
            return
        connection.send(("ok", None))
        while True:
            try:
                message = connection.recv()
            except EOFError:
                break
            if message is None:
                break
            fn, call_args = message
            try:
                result = fn(spark, *call_args)
            except BaseException:
                connection.send(("error", _short_traceback()))
            else:
                connection.send(("ok", result))
    finally:
        _end_jvm()


def _end_jvm() -> None:
    """Stops this process's SparkContext, and waits for the JVM PySpark started to exit (it
    exits when its stdin closes), so that it is not left to outlive its parent."""
    from pyspark import SparkContext

    gateway = SparkContext._gateway
    with contextlib.suppress(Exception):
        if SparkContext._active_spark_context is not None:
            SparkContext._active_spark_context.stop()
    process = getattr(gateway, "proc", None)
    if process is not None:
        with contextlib.suppress(Exception):
            process.stdin.close()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=30)


def _short_traceback(frames: int = 8) -> str:
    """The exception being handled, with at most ``frames`` lines of each Java stack trace in
    it (a Py4J error carries the JVM's whole stack)."""
    lines, java = [], 0
    for line in traceback.format_exc().splitlines():
        java = java + 1 if line.lstrip().startswith("at ") and "(" in line else 0
        if java <= frames:
            lines.append(line)
        elif java == frames + 1:
            lines.append("\t...")
    return "\n".join(lines)


def wait_for_executors(spark: Any, count: int, timeout: float = 120) -> int:
    """Waits (in a driver) until ``count`` executors are registered; returns how many
    ``getExecutorMemoryStatus`` lists (the driver's block manager included)."""
    status = spark.sparkContext._jsc.sc()

    return wait_until(
        lambda: status.getExecutorMemoryStatus().size() == count + 1 and count + 1,
        timeout,
        f"{count} executors to register",
        interval=0.25,
    )


# --- a Spark Connect server ---------------------------------------------------------------------


@dataclass
class ConnectServer:
    process: SparkProcess
    port: int
    timeout: float = 180

    @property
    def url(self) -> str:
        return f"sc://127.0.0.1:{self.port}"

    def wait_until_ready(self) -> None:
        """Waits until the server answers on its port (``timeout`` seconds at most)."""

        def answers() -> bool:
            self.process.check_alive()
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=2):
                    return True
            except OSError:
                return False

        try:
            wait_until(
                answers, self.timeout, f"the Spark Connect server to answer on port {self.port}", interval=0.5
            )
        except TimeoutError as e:
            raise TimeoutError(f"{e}; its log ends:\n{self.process.tail()}") from None


@contextlib.contextmanager
def connect_server(
    directory: Path,
    jars: Sequence[str | os.PathLike[str]] = (),
    master: str = "local[2]",
    conf: dict[str, str] | None = None,
    timeout: float = 180,
    wait: bool = True,
) -> Iterator[ConnectServer]:
    """A Spark Connect server (``SparkConnectServer`` through ``spark-submit``) on 127.0.0.1 with
    ``jars`` (``--jars``), answering on its port before this yields (unless ``wait`` is false:
    then call :meth:`ConnectServer.wait_until_ready`); stopped when the block ends."""
    directory = Path(directory)
    port = free_port()
    settings = {
        "spark.connect.grpc.binding.port": str(port),
        "spark.connect.grpc.binding.address": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.driver.host": "127.0.0.1",
        "spark.ui.enabled": "false",
        "spark.sql.shuffle.partitions": "2",
        "spark.sql.session.timeZone": "UTC",
        **(conf or {}),
    }
    command = [
        str(spark_home() / "bin" / "spark-submit"),
        "--class",
        "org.apache.spark.sql.connect.service.SparkConnectServer",
        "--master",
        master,
        "--driver-memory",
        "1g",
    ]
    for key, value in settings.items():
        command += ["--conf", f"{key}={value}"]
    if jars:
        command += ["--jars", ",".join(str(j) for j in jars)]
    command.append("spark-internal")
    (directory / "local").mkdir(parents=True, exist_ok=True)
    env = spark_environment(SPARK_LOCAL_DIRS=str(directory / "local"))
    process = _start("connect-server", command, directory, env)
    try:
        server = ConnectServer(process, port, timeout)
        if wait:
            server.wait_until_ready()
        yield server
    finally:
        process.stop()
