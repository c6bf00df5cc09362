"""Real servers for the class-of-any-size tests: a Dask scheduler and workers started as separate
processes (as on a cluster), and a PostgreSQL server run by an unprivileged user (initdb refuses
root). Both listen on 127.0.0.1 only and are stopped at the end."""
from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from heads_lessons import REPO


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for_port(port: int, proc: subprocess.Popen, what: str, timeout: float = 60) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise RuntimeError(f"{what} did not listen on {port} within {timeout} s")


def worker_env(path: str | None = None) -> dict:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    env.pop("PYTHONPATH", None)   # a worker needs no path to the grader: the task brings it
    if path is not None:
        env["PATH"] = path
    return env


class DaskCluster:
    """`python -m distributed.cli.dask_scheduler` and workers, each in a process group of its own."""

    def __init__(self, log_dir: Path):
        self.log_dir = Path(log_dir)
        self.port = free_port()
        self.address = f"tcp://127.0.0.1:{self.port}"
        self.workers: list[subprocess.Popen] = []
        self.scheduler = self._start("scheduler", [sys.executable, "-m", "distributed.cli.dask_scheduler",
                                                   "--host", "127.0.0.1", "--port", str(self.port),
                                                   "--no-dashboard"], worker_env())
        _wait_for_port(self.port, self.scheduler, "the Dask scheduler")

    def _start(self, name: str, cmd: list[str], env: dict) -> subprocess.Popen:
        log = open(self.log_dir / f"{name}.log", "ab")
        return subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=REPO,
                                start_new_session=True)

    def add_worker(self, path: str | None = None) -> subprocess.Popen:
        """A worker with one thread (`path`: its PATH, to make one without bubblewrap)."""
        proc = self._start(f"worker-{len(self.workers)}", [
            sys.executable, "-m", "distributed.cli.dask_worker", self.address, "--nthreads", "1",
            "--no-dashboard", "--memory-limit", "0", "--death-timeout", "60"], worker_env(path))
        self.workers.append(proc)
        return proc

    def wait_for_workers(self, n: int, timeout: float = 120) -> None:
        from distributed import Client

        with Client(self.address, timeout=30) as client:
            client.wait_for_workers(n, timeout=timeout)

    @staticmethod
    def kill(proc: subprocess.Popen) -> None:
        """Kill a process group at once (a machine lost: no clean shutdown)."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)

    def stop(self) -> None:
        for proc in [*self.workers, self.scheduler]:
            if proc.poll() is None:
                self.kill(proc)

    def log(self) -> str:
        return "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-3000:]}"
                         for p in sorted(self.log_dir.glob("*.log")))


def postgres_bin() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


class Postgres:
    """A PostgreSQL server in a fresh data folder on a free port, run as `postgres` when we are root."""

    def __init__(self):
        bin_dir = postgres_bin()
        if bin_dir is None:
            raise FileNotFoundError("PostgreSQL is not installed (apt-get install postgresql)")
        self.folder = Path(tempfile.mkdtemp(prefix="heads-pg-"))
        self.port = free_port()
        self.as_user: list[str] = []
        if os.geteuid() == 0:
            user = pwd.getpwnam("postgres")
            os.chown(self.folder, user.pw_uid, user.pw_gid)
            self.as_user = ["runuser", "-u", "postgres", "--"]
        data, log = self.folder / "data", self.folder / "server.log"
        self._run([str(bin_dir / "initdb"), "-D", str(data), "-A", "trust", "-U", "heads", "-E", "UTF8"])
        self._run([str(bin_dir / "pg_ctl"), "-D", str(data), "-l", str(log), "-w", "-t", "60", "-o",
                   f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.folder}", "start"])
        self.pg_ctl = [str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"]
        self._run([str(bin_dir / "createdb"), "-h", "127.0.0.1", "-p", str(self.port), "-U", "heads", "gradebook"])
        self.url = f"postgresql+psycopg://heads@127.0.0.1:{self.port}/gradebook"

    def _run(self, cmd: list[str]) -> None:
        proc = subprocess.run([*self.as_user, *cmd], capture_output=True, text=True, timeout=120)
        if proc.returncode:
            raise RuntimeError(f"{' '.join(cmd)} failed: {proc.stdout}{proc.stderr}")

    def stop(self) -> None:
        with contextlib.suppress(Exception):
            self._run(self.pg_ctl)
        shutil.rmtree(self.folder, ignore_errors=True)
