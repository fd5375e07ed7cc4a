"""Start the real daemon as a subprocess on a free loopback port (helpers for integration tests)."""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from conftest import free_port, wait_until

ALWAYS_FIRING_RULES = """groups:
  - name: t
    rules:
      - alert: AlwaysFiring
        expr: vector(1)
        labels: {severity: warning}
        annotations: {summary: always on}
"""
"""A rule file whose one alert fires at the first evaluation (for API and CLI tests)."""


@dataclass
class DaemonProc:
    proc: subprocess.Popen[bytes]
    port: int
    log_path: Path
    state_dir: Path
    started: float = field(default_factory=time.monotonic)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def get(self, path: str) -> httpx.Response:
        return httpx.get(self.base + path, timeout=5.0, trust_env=False)

    def metrics(self) -> str:
        return self.get("/metrics").text

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_ready(self, timeout: float = 30.0) -> float:
        def up() -> bool:
            if self.proc.poll() is not None:
                raise AssertionError(f"daemon exited {self.proc.returncode}:\n{self.log()}")
            try:
                return self.get("/healthz").status_code == 200
            except httpx.HTTPError:
                return False

        wait_until(up, timeout, "the daemon to serve /healthz")
        return time.monotonic() - self.started

    def terminate(self, timeout: float = 10.0) -> tuple[int, float]:
        t0 = time.monotonic()
        self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait(timeout)
        return code, time.monotonic() - t0

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


def start_daemon(
    tmp: Path,
    *args: str,
    state_dir: Path | None = None,
    env: dict[str, str] | None = None,
    nofile: int | None = None,
    port: int | None = None,
) -> DaemonProc:
    """``nofile``: the daemon's soft open-file limit (RLIMIT_NOFILE), for descriptor tests;
    ``port``: the one a config given in ``args`` names (default: a free one)."""
    port = port or free_port()
    state = state_dir or tmp / "state"
    log_path = tmp / f"daemon-{port}.log"
    cmd = [
        sys.executable,
        "-m",
        "inferwatch",
        "run",
        "--listen",
        f"127.0.0.1:{port}",
        "--state-dir",
        str(state),
        *args,
    ]
    full_env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
    with log_path.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=full_env)
    if nofile is not None:  # Linux: before the daemon has opened more than a few files
        hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        resource.prlimit(proc.pid, resource.RLIMIT_NOFILE, (nofile, hard))
    return DaemonProc(proc, port, log_path, state)
