"""What the benchmarks share: free ports, waiting on conditions, a real daemon in a temporary
directory, its /metrics read back, and the CPU and memory of a process tree.

Standard library, psutil and httpx only (both are dependencies of the daemon itself).
"""

from __future__ import annotations

import json
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
# The inferwatch of the interpreter running the benchmark: the checkout's .venv when a script is
# run by hand, the install a host gets under `make bench` (bench/installed.py).
INFERWATCH = Path(sys.executable).with_name("inferwatch")
if not INFERWATCH.exists():
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
    python = f"Python {platform.python_version()} ({os.path.realpath(sys.executable)})"
    return f"{now}, {platform.node()}, {os.cpu_count()} cores, {python}, load average {load}"


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
def daemon(config: str, workdir: Path, *, ready_timeout: float = 60.0,
           profile: Path | None = None) -> Iterator[Daemon]:  # fmt: skip
    """``inferwatch run`` on a free loopback port with ``config`` (YAML, without ``listen``);
    under cProfile, its stats written to ``profile`` at exit, when given."""
    port = free_port()
    path = workdir / "config.yaml"
    path.write_text(f"listen: 127.0.0.1:{port}\n{config}", encoding="utf-8")
    log = (workdir / "daemon.log").open("wb")
    cmd = [str(INFERWATCH), "run", "--config", str(path), "--state-dir", str(workdir / "state")]
    if profile is not None:
        prof = str(profile.resolve())
        cmd[:1] = [sys.executable, "-m", "cProfile", "-o", prof, "-m", "inferwatch"]
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


# -- what several figures share: the 8-GPU host, engine logs, node_exporter, results --------------
FAKE_PROFILE = REPO / "tests" / "fixtures" / "nvml" / "8x-h100-sxm.json"
NODE_EXPORTER = "/usr/bin/prometheus-node-exporter"


def host_config(engine_logs: list[Path], *, kernel_file: Path | None = None,
                gpu_interval: str = "2s") -> str:  # fmt: skip
    """Config YAML (without ``listen``): 8 fake GPUs, one vLLM engine per log, the kernel log
    from ``kernel_file`` (off when None), the shipped rules, no receivers."""
    engines = "".join(f"  - name: e{i}\n    log: [{log}]\n" for i, log in enumerate(engine_logs))
    kernel = f"{{source: file, path: {kernel_file}}}" if kernel_file else "{source: off}"
    return (
        f"gpus: {{backend: fake, profile: {FAKE_PROFILE}, expected: 8, interval: {gpu_interval}}}\n"
        f"kernel: {kernel}\n" + (f"engines:\n{engines}" if engines else "")
    )


def ensure_tool(path: str, package: str) -> str | None:
    """``path`` when it exists, after ``apt-get install package`` as root if need be; None (with
    the reason printed) when it cannot be had."""
    if Path(path).exists():
        return path
    if os.geteuid() == 0:
        subprocess.run(["apt-get", "install", "-y", "-q", package], check=False,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    if Path(path).exists():
        return path
    print(f"{path} missing (Debian package {package}; apt-get needs root)", file=sys.stderr)
    return None


@contextmanager
def node_exporter() -> Iterator[tuple[subprocess.Popen[bytes], str] | None]:
    """Debian's prometheus-node-exporter on a free loopback port (default collectors), or None
    when it is not installed and cannot be."""
    binary = ensure_tool(NODE_EXPORTER, "prometheus-node-exporter")
    if binary is None:
        yield None
        return
    port = free_port()
    proc = subprocess.Popen([binary, f"--web.listen-address=127.0.0.1:{port}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    url = f"http://127.0.0.1:{port}/metrics"

    def up() -> bool:
        if proc.poll() is not None:
            raise RuntimeError(f"node_exporter exited {proc.returncode}")
        try:
            return httpx.get(url, timeout=2, trust_env=False).status_code == 200
        except httpx.HTTPError:
            return False

    try:
        wait_until(up, 30, "node_exporter's /metrics")
        yield proc, url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def peak_rss_mb(pid: int) -> float:
    """The process's peak resident set (VmHWM) in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def write_json(path: Path | None, doc: object) -> None:
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")


def source_log(lines: int) -> Path:
    """A generator log (bench/gen_engine_log.py) of at least ``lines`` lines in bench/out."""
    out = REPO / "bench" / "out"
    out.mkdir(parents=True, exist_ok=True)
    for have in sorted(out.glob("engine-*.log")):
        if int(have.stem.split("-")[1]) >= lines:
            return have
    path = out / f"engine-{lines}.log"
    subprocess.run([sys.executable, str(REPO / "bench/gen_engine_log.py"), str(path), str(lines)],
                   check=True, stdout=subprocess.DEVNULL)  # fmt: skip
    return path
