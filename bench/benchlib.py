"""What the benchmarks share: free ports, waiting on conditions, a real daemon in a temporary
directory, its /metrics read back, and the CPU and memory of a process tree.

Standard library, psutil and httpx only (both are dependencies of the daemon itself).
"""

from __future__ import annotations

import os
import platform
import signal
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar

import httpx
import psutil
from prometheus_client.parser import text_string_to_metric_families

REPO = Path(__file__).resolve().parents[1]
INFERWATCH = REPO / ".venv" / "bin" / "inferwatch"
T = TypeVar("T")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def wait_until(check: Callable[[], T | None], timeout: float, what: str) -> T:
    """Poll ``check`` until it returns something truthy; raise after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.02)


def machine() -> str:
    load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    return f"{now}, {platform.node()}, {os.cpu_count()} cores, load average {load}"


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def tree_cpu(proc: psutil.Process) -> float:
    """User + system CPU seconds of a process and its live children."""
    total = 0.0
    for p in (proc, *proc.children(recursive=True)):
        try:
            t = p.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += t.user + t.system
    return total


@dataclass
class Daemon:
    proc: subprocess.Popen[bytes]
    port: int
    workdir: Path

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ps(self) -> psutil.Process:
        return psutil.Process(self.proc.pid)

    def get(self, path: str, timeout: float = 5.0) -> httpx.Response:
        return httpx.get(self.base + path, timeout=timeout, trust_env=False)

    def metric(self, name: str, **labels: str) -> float:
        """The sum of the samples of ``name`` whose labels include ``labels`` (0 when none)."""
        total = 0.0
        for family in text_string_to_metric_families(self.get("/metrics").text):
            for sample in family.samples:
                if sample.name == name and labels.items() <= sample.labels.items():
                    total += sample.value
        return total


@contextmanager
def daemon(config: str, workdir: Path, *, ready_timeout: float = 60.0) -> Iterator[Daemon]:
    """``inferwatch run`` on a free loopback port with ``config`` (YAML, without ``listen``)."""
    port = free_port()
    path = workdir / "config.yaml"
    path.write_text(f"listen: 127.0.0.1:{port}\n{config}", encoding="utf-8")
    log = (workdir / "daemon.log").open("wb")
    cmd = [str(INFERWATCH), "run", "--config", str(path), "--state-dir", str(workdir / "state")]
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
    d = Daemon(proc, port, workdir)
    try:

        def ready() -> bool:
            if proc.poll() is not None:
                raise RuntimeError(f"daemon exited {proc.returncode}; see {workdir}/daemon.log")
            try:
                return d.get("/healthz").status_code == 200
            except httpx.HTTPError:
                return False

        wait_until(ready, ready_timeout, "the daemon's /healthz")
        yield d
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        log.close()


def compile_package() -> None:
    """Byte-compile the package once, as an installed one is (pip compiles at install)."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(REPO / "daemon")], check=True,
                   stdout=subprocess.DEVNULL)  # fmt: skip
