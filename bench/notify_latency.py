"""Notification latency: a kmsg Xid record written -> webhook received by a local HTTP sink.

Target (issue "Notifications"): with group_wait 0, p99 <= 100 ms over 50 trials, measured side
by side with Prometheus + Alertmanager (Debian's binaries) at 1-s scrape and evaluation intervals.

One run, two phases, one daemon:

1. ``inferwatch``: the real daemon (``inferwatch run``) reads /dev/kmsg, its shipped rules fire
   ``GpuFallenOffBus`` and its route (group_by alertname + pci_bus_id, group_wait 0s) posts the
   Alertmanager v4 webhook to ``/inferwatch`` on a sink in this process.
2. ``side by side``: a Prometheus scrapes the same daemon's ``/metrics`` every 1 s, evaluates the
   same rule file (rules/gpu.yaml) every 1 s and sends to an Alertmanager (group_wait 0s) whose
   webhook posts to ``/alertmanager`` on the same sink. Every record written is measured on both
   paths at once; the inferwatch numbers of this phase are those of a daemon being scraped.

Each trial writes one ``Xid 79`` record through a new descriptor (the kernel rate-limits writes
per open file) with its own PCI domain, so every trial is a new alert and a new group on both
sides; latency = ``time.monotonic()`` after the sink has read the POST body minus
``time.monotonic()`` just before ``os.write``. Trials are paced (``--gap``, >= 0.5 s) after both
expected webhooks have arrived (or timed out). Everything runs on loopback, on free ports, in a
temporary directory; every process started here is stopped at the end, also on errors.

The daemon also samples 8 fake GPUs (tests/fixtures/nvml/8x-h100-sxm.json every 2 s) and follows
two engine logs. A third phase (``--crash-trials``, while Prometheus still scrapes the daemon)
appends one fatal line of a vLLM engine to one of those logs per trial, each with an (engine,
crash signature) pair not used before, and measures the line appended -> the daemon's
``EngineCrashed`` webhook (inferwatch only: Prometheus evaluates the GPU rules). An engine death
is logged as a chain of lines over a few seconds, so the daemon decides a crash incident
``crash_window`` (5 s) after its first line by design; that wait is part of this figure.
The number of records in the kernel ring when the run starts is reported (``ring_records``).

Run as root (writing /dev/kmsg): ``.venv/bin/python bench/notify_latency.py`` (see --help).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, TypeVar

from benchlib import INFERWATCH

REPO = Path(__file__).resolve().parents[1]
RULES = REPO / "rules" / "gpu.yaml"
ALERT = "GpuFallenOffBus"
CRASH_ALERT = "EngineCrashed"
FAKE_PROFILE = REPO / "tests" / "fixtures" / "nvml" / "8x-h100-sxm.json"
ENGINES = ("e0", "e1")
# One fatal vLLM line per crash signature the daemon names (parsers/vllm_faults.py's anchors).
CRASH_LINES = (
    ("illegal_memory_access", "[gpu_model_runner.py:1] RuntimeError: CUDA error: an illegal "
     "memory access was encountered"),
    ("cuda_oom", "[gpu_worker.py:1] torch.OutOfMemoryError: CUDA out of memory. Tried to "
     "allocate 2.00 GiB."),
    ("nccl", "[parallel_state.py:1] RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1, "
     "unhandled cuda error"),
    ("iteration_timeout", "[core.py:1] Engine iteration timed out. This should never happen!"),
    ("assertion", "[core.py:1] AssertionError: bench"),
    ("engine_died", "[core_client.py:1] Engine core proc EngineCore_0 died unexpectedly, "
     "shutting down client."),
    ("worker_died", "[multiproc_executor.py:1] Worker VllmWorkerProcess pid 4242 died, exit "
     "code: -9"),
    ("fatal_error", "[core.py:1] EngineCore encountered a fatal error."),
    ("output_handler_failed", "[async_llm.py:1] AsyncLLM output_handler failed."),
    ("engine_dead", "[async_llm.py:1] vllm.v1.engine.exceptions.EngineDeadError: EngineCore "
     "encountered an issue."),
)  # fmt: skip
IW_PATH = "/inferwatch"
AM_PATH = "/alertmanager"
T = TypeVar("T")
NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


# -- helpers -------------------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def wait_until(check: Callable[[], T | None], timeout: float, what: str) -> T:
    """Poll ``check`` until it returns something truthy; raise after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    delay = 0.01
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(delay)
        delay = min(delay * 2, 0.2)


def http_get(url: str, timeout: float = 2.0) -> tuple[int, bytes]:
    try:
        with NO_PROXY.open(url, timeout=timeout) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, b""
    except (urllib.error.URLError, OSError):
        return 0, b""


def get_json(url: str) -> Any:
    code, body = http_get(url)
    return json.loads(body) if code == 200 else None


def kmsg_write(text: str) -> tuple[float, float]:
    """Write one record through a new descriptor; returns (monotonic, wall) just before."""
    fd = os.open("/dev/kmsg", os.O_WRONLY)
    try:
        data = f"<4>{text}\n".encode()
        mono, wall = time.monotonic(), time.time()
        os.write(fd, data)
    finally:
        os.close(fd)
    return mono, wall


def parse_rfc3339(text: str) -> float:
    """RFC 3339 with up to nanoseconds (Alertmanager's startsAt) -> Unix seconds."""
    text = text.replace("Z", "+00:00")
    main, _, rest = text.partition(".")
    if not rest:
        return datetime.fromisoformat(text).timestamp()
    digits = ""
    while rest and rest[0].isdigit():
        digits, rest = digits + rest[0], rest[1:]
    base = datetime.fromisoformat(main + rest).timestamp()
    return base + (float("0." + digits) if digits else 0.0)


def percentile(values: list[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default 'linear' method)."""
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def summary(values: list[float]) -> dict[str, float | int]:
    if not values:
        return {"n": 0}
    return {
        "n": len(values),
        "min": min(values),
        "median": percentile(values, 0.5),
        "p90": percentile(values, 0.9),
        "p99": percentile(values, 0.99),
        "max": max(values),
        "mean": sum(values) / len(values),
    }


def source_state() -> dict[str, Any]:
    """The commit measured and whether daemon/ had uncommitted changes (read-only git)."""

    def git(*args: str) -> str:
        try:
            done = subprocess.run(
                ["git", *args], check=False, cwd=REPO, capture_output=True, text=True, timeout=10
            )
        except (OSError, subprocess.TimeoutExpired):
            return ""
        return done.stdout.strip()

    changed = git("status", "--porcelain", "--", "daemon").splitlines()
    return {"commit": git("rev-parse", "HEAD"), "daemon_uncommitted_files": len(changed)}


def cpu_times() -> tuple[float, float]:
    """(busy, total) jiffies of all CPUs since boot, from /proc/stat."""
    fields = [float(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0.0)  # idle + iowait
    return sum(fields) - idle, sum(fields)


def process_cpu_s(pid: int) -> float | None:
    """User + system CPU seconds a process has used so far."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# -- the webhook sink ----------------------------------------------------------------------------
class Sink:
    """A local HTTP server that timestamps the first firing alert per (path, pci_bus_id)."""

    def __init__(self) -> None:
        self.first: dict[tuple[str, str], dict[str, Any]] = {}
        self.posts = 0
        self.cond = threading.Condition()
        sink = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                mono, wall = time.monotonic(), time.time()
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()
                sink.received(self.path, mono, wall, body)

            def log_message(self, *_args: object) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def received(self, path: str, mono: float, wall: float, body: bytes) -> None:
        try:
            payload = json.loads(body)
        except ValueError:
            return
        with self.cond:
            self.posts += 1
            for alert in payload.get("alerts", []):
                labels = alert.get("labels", {})
                name = labels.get("alertname")
                bus = labels.get("pci_bus_id")
                if name == CRASH_ALERT:
                    bus = f"{labels.get('engine')}/{labels.get('signature')}"
                if alert.get("status") != "firing" or name not in (ALERT, CRASH_ALERT) or not bus:
                    continue
                self.first.setdefault(
                    (path, bus),
                    {"mono": mono, "wall": wall, "startsAt": alert.get("startsAt", "")},
                )
            self.cond.notify_all()

    def wait(self, keys: list[tuple[str, str]], timeout: float) -> dict[tuple[str, str], Any]:
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                got = {k: self.first[k] for k in keys if k in self.first}
                left = deadline - time.monotonic()
                if len(got) == len(keys) or left <= 0:
                    return got
                self.cond.wait(left)

    def __enter__(self) -> Sink:
        self.thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


# -- processes -----------------------------------------------------------------------------------
@dataclass
class Procs:
    tmp: Path
    running: list[tuple[str, subprocess.Popen[bytes]]] = field(default_factory=list)

    def start(self, name: str, cmd: list[str], env: dict[str, str] | None = None) -> Path:
        log_path = self.tmp / f"{name}.log"
        with log_path.open("wb") as out:
            proc = subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env={**os.environ, **(env or {})},
                cwd=self.tmp,
            )
        self.running.append((name, proc))
        return log_path

    def check(self) -> None:
        for name, proc in self.running:
            if proc.poll() is not None:
                tail = (self.tmp / f"{name}.log").read_text(errors="replace")[-3000:]
                raise RuntimeError(f"{name} exited with {proc.returncode}:\n{tail}")

    def stop_all(self) -> None:
        for _, proc in reversed(self.running):
            if proc.poll() is None:
                proc.terminate()
        for _, proc in reversed(self.running):
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)
        self.running.clear()


def ready(procs: Procs, url: str) -> Callable[[], bool]:
    def check() -> bool:
        procs.check()
        return http_get(url)[0] == 200

    return check


# -- configs -------------------------------------------------------------------------------------
def daemon_config(port: int, state: Path, hook: str, rules: str | None, tmp: Path) -> str:
    """JSON is YAML: the daemon's config, Alertmanager syntax for route and receivers."""
    config: dict[str, Any] = {
        "listen": f"127.0.0.1:{port}",
        "state_dir": str(state),
        "gpus": {"backend": "fake", "profile": str(FAKE_PROFILE), "expected": 8, "interval": "2s"},
        # The ring holds the Xid records of earlier runs and tests, some minutes old: with the
        # default alert_max_age (10 min) a daemon started right after another run pages those
        # at its start and resolves them during the trials, its notifier busy with them. The
        # trials' records come after the start, which this setting does not touch.
        "kernel": {"source": "kmsg", "alert_max_age": "1s"},
        "engines": [{"name": e, "log": [str(tmp / f"{e}.log")]} for e in ENGINES],
        "route": {
            "receiver": "bench",
            "group_by": ["alertname", "pci_bus_id", "engine", "signature"],
            "group_wait": "0s",
            "group_interval": "10s",
        },
        "receivers": [{"name": "bench", "webhook_configs": [{"url": hook}]}],
    }
    if rules:
        config["rule_files"] = [rules]
    return json.dumps(config, indent=2)


def prometheus_config(daemon_port: int, am_port: int, interval: str, rules: Path) -> str:
    config = {
        "global": {
            "scrape_interval": interval,
            "scrape_timeout": interval,
            "evaluation_interval": interval,
        },
        "rule_files": [str(rules)],
        "alerting": {
            "alertmanagers": [
                {"api_version": "v2", "static_configs": [{"targets": [f"127.0.0.1:{am_port}"]}]}
            ]
        },
        "scrape_configs": [
            {
                "job_name": "inferwatch",
                "static_configs": [{"targets": [f"127.0.0.1:{daemon_port}"]}],
            }
        ],
    }
    return json.dumps(config, indent=2)


def alertmanager_config(hook: str) -> str:
    config = {
        "route": {
            "receiver": "bench",
            "group_by": ["alertname", "pci_bus_id"],
            "group_wait": "0s",
            "group_interval": "1s",
            "repeat_interval": "1h",
        },
        "receivers": [
            {"name": "bench", "webhook_configs": [{"url": hook, "send_resolved": False}]}
        ],
    }
    return json.dumps(config, indent=2)


# -- the benchmark -------------------------------------------------------------------------------
@dataclass
class Trial:
    phase: str
    index: int
    bus: str
    written_mono: float
    written_wall: float
    inferwatch_ms: float | None = None
    alertmanager_ms: float | None = None
    am_starts_at: float | None = None


def domains_in_ring() -> tuple[set[str], int]:
    """PCI domains of every Xid record still in the kernel's ring buffer (earlier runs and the
    test suite write there too: a trial must use a bus no record names yet), and the number of
    records in the ring."""
    found: set[str] = set()
    records = 0
    fd = os.open("/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK)
    try:
        while True:
            try:
                raw = os.read(fd, 16384)
            except BlockingIOError:
                break
            except BrokenPipeError:
                continue
            if not raw:
                break
            records += 1
            found.update(m.lower() for m in re.findall(rb"PCI:([0-9a-fA-F]{4}):", raw))
    finally:
        os.close(fd)
    return {f.decode() for f in found}, records


@dataclass
class Bench:
    args: argparse.Namespace
    tmp: Path
    sink: Sink
    procs: Procs
    base_domain: int = field(default_factory=lambda: 0x1000 + secrets.randbelow(0xC000))
    counter: int = 0
    used: set[str] | None = None
    ring_records: int | None = None
    crashes: int = 0
    trials: list[Trial] = field(default_factory=list)
    daemon_port: int = 0
    daemon_log: Path | None = None
    prom_port: int = 0
    prom_rules: Path = RULES
    source: dict[str, Any] = field(default_factory=source_state)

    def prepare_rules(self) -> tuple[str | None, Path]:
        """The daemon's rule files and Prometheus's rule file.

        ``isolated`` (default): private copies, made before the daemon starts, in two
        directories, so that nothing reads the directory the daemon watches for hot reload
        (see RESULTS.md: a read of a watched rule file makes the daemon reload its rules in a
        loop). ``shipped``: the daemon's builtin rules and Prometheus reading rules/gpu.yaml of
        the checkout, as a user would run them.
        """
        if self.args.rules == "shipped":
            return None, RULES
        mine, theirs = self.tmp / "inferwatch-rules", self.tmp / "prometheus-rules"
        mine.mkdir()
        theirs.mkdir()
        for f in sorted(RULES.parent.glob("*.yaml")):
            shutil.copyfile(f, mine / f.name)
        shutil.copyfile(RULES, theirs / RULES.name)
        return str(mine / "*.yaml"), theirs / RULES.name

    def start_daemon(self) -> None:
        self.daemon_port = free_port()
        daemon_rules, self.prom_rules = self.prepare_rules()
        cfg = self.tmp / "inferwatch.yaml"
        hook = self.sink.url(IW_PATH)
        for e in ENGINES:
            (self.tmp / f"{e}.log").touch()
        cfg.write_text(
            daemon_config(self.daemon_port, self.tmp / "state", hook, daemon_rules, self.tmp)
        )
        inferwatch = str(INFERWATCH)
        env = {"PYTHONUNBUFFERED": "1"}
        if self.args.daemon_path:  # another copy of the package (a fix under test, a commit)
            env["PYTHONPATH"] = str(self.args.daemon_path.resolve())
        self.daemon_log = self.procs.start(
            "inferwatch", [inferwatch, "run", "--config", str(cfg)], env
        )
        url = f"http://127.0.0.1:{self.daemon_port}/healthz"
        wait_until(ready(self.procs, url), 60, "inferwatch /healthz")

        def settled() -> bool:
            """The kmsg source runs and the records already in the ring are applied (its
            health may say "starting" until its first error-free poll: not waited for)."""
            self.procs.check()
            doc = get_json(f"http://127.0.0.1:{self.daemon_port}/api/v1/status") or {}
            kernel = doc.get("sources", {}).get("kernel", {})
            running = kernel.get("state") in ("starting", "up")
            idle = (doc.get("notify") or {}).get("outbox_pending", 1) == 0
            return running and idle and not any(doc.get("queues", {"": 1}).values())

        wait_until(settled, 60, "the daemon's kmsg source with empty queues and outbox")

    def start_prometheus(self) -> None:
        am_port, self.prom_port = free_port(), free_port()
        am_cfg = self.tmp / "alertmanager.yml"
        am_cfg.write_text(alertmanager_config(self.sink.url(AM_PATH)))
        self.procs.start(
            "alertmanager",
            [
                self.args.alertmanager,
                f"--config.file={am_cfg}",
                f"--storage.path={self.tmp / 'am-data'}",
                f"--web.listen-address=127.0.0.1:{am_port}",
                "--cluster.listen-address=",
                "--log.level=warn",
            ],
        )
        wait_until(ready(self.procs, f"http://127.0.0.1:{am_port}/-/ready"), 60, "alertmanager")
        prom_cfg = self.tmp / "prometheus.yml"
        prom_cfg.write_text(
            prometheus_config(self.daemon_port, am_port, self.args.interval, self.prom_rules)
        )
        self.procs.start(
            "prometheus",
            [
                self.args.prometheus,
                f"--config.file={prom_cfg}",
                f"--storage.tsdb.path={self.tmp / 'prom-data'}",
                f"--web.listen-address=127.0.0.1:{self.prom_port}",
                "--log.level=warn",
            ],
        )
        api = f"http://127.0.0.1:{self.prom_port}/api/v1"
        wait_until(ready(self.procs, f"http://127.0.0.1:{self.prom_port}/-/ready"), 60, "prom")

        def scraping() -> bool:
            self.procs.check()
            doc = get_json(f"{api}/targets")
            targets = (doc or {}).get("data", {}).get("activeTargets", [])
            return bool(targets) and all(t.get("health") == "up" for t in targets)

        def wired() -> bool:
            doc = get_json(f"{api}/alertmanagers")
            rules = get_json(f"{api}/rules")
            groups = (rules or {}).get("data", {}).get("groups", [])
            ams = (doc or {}).get("data", {}).get("activeAlertmanagers", [])
            return bool(ams) and bool(groups)

        wait_until(scraping, 30, "prometheus to scrape the daemon")
        wait_until(wired, 30, "prometheus to load the rules and find the alertmanager")

    def crash_write(self) -> tuple[str, float, float]:
        """Append the next unused (engine, signature) fatal line; (key, monotonic, wall)."""
        pairs = [(e, sig, text) for sig, text in CRASH_LINES for e in ENGINES]
        engine, sig, text = pairs[self.crashes % len(pairs)]
        self.crashes += 1
        stamp = datetime.now().strftime("%m-%d %H:%M:%S")  # vLLM logs local time
        with (self.tmp / f"{engine}.log").open("a", encoding="utf-8") as log:
            mono, wall = time.monotonic(), time.time()
            log.write(f"ERROR {stamp} {text}\n")
        return f"{engine}/{sig}", mono, wall

    def one(self, phase: str, paths: list[str], timeout: float) -> Trial:
        self.procs.check()
        if phase.startswith("engine-crash"):
            key, mono, wall = self.crash_write()
            trial = Trial(phase, self.crashes, key, mono, wall)
            got = self.sink.wait([(IW_PATH, key)], timeout)
            if (IW_PATH, key) in got:
                trial.inferwatch_ms = 1000 * (got[IW_PATH, key]["mono"] - mono)
            return trial
        if self.used is None:
            self.used, self.ring_records = domains_in_ring()
        domain = f"{(self.base_domain + self.counter) & 0xFFFF:04x}"
        self.counter += 1
        while domain in self.used:  # an earlier record with this bus would be matched instead
            domain = f"{(self.base_domain + self.counter) & 0xFFFF:04x}"
            self.counter += 1
        bus = f"{domain}:3b:00.0"
        mono, wall = kmsg_write(
            f"NVRM: Xid (PCI:{domain}:3b:00): 79, pid={os.getpid()}, name=bench, "
            "GPU has fallen off the bus."
        )
        trial = Trial(phase, self.counter, bus, mono, wall)
        got = self.sink.wait([(p, bus) for p in paths], timeout)
        if (IW_PATH, bus) in got:
            trial.inferwatch_ms = 1000 * (got[IW_PATH, bus]["mono"] - mono)
        if (AM_PATH, bus) in got:
            trial.alertmanager_ms = 1000 * (got[AM_PATH, bus]["mono"] - mono)
            starts = got[AM_PATH, bus]["startsAt"]
            trial.am_starts_at = parse_rfc3339(starts) if starts else None
        return trial

    def phase(self, name: str, n: int, paths: list[str], timeout: float) -> None:
        for i in range(n + self.args.warmup):
            trial = self.one(name if i >= self.args.warmup else f"{name}-warmup", paths, timeout)
            self.trials.append(trial)
            show = "  ".join(
                f"{label} {'timeout' if v is None else f'{v:7.1f} ms'}"
                for label, v, p in (
                    ("inferwatch", trial.inferwatch_ms, IW_PATH),
                    ("prometheus+alertmanager", trial.alertmanager_ms, AM_PATH),
                )
                if p in paths
            )
            print(f"{trial.phase:>19} {i + 1:3d} {trial.bus}  {show}", flush=True)
            # The paced gap between trials (kmsg rate limit), plus a random part so that writes
            # land at every phase of Prometheus's 1-s scrape and evaluation cycles.
            jitter = self.args.jitter * secrets.randbelow(1001) / 1000
            time.sleep(self.args.gap + jitter)


# -- breakdowns ----------------------------------------------------------------------------------
def daemon_firing_times(log_path: Path) -> dict[str, float]:
    """pci_bus_id -> wall time of the daemon's 'alert firing' log line for our alert."""
    out: dict[str, float] = {}
    for line in log_path.read_text(errors="replace").splitlines():
        if '"alert firing"' not in line:
            continue
        try:
            doc = json.loads(line)
        except ValueError:
            continue
        labels = doc.get("labels") or {}
        bus = labels.get("pci_bus_id")
        if doc.get("alertname") == ALERT and bus and "timestamp" in doc:
            out.setdefault(bus, parse_rfc3339(doc["timestamp"]))
    return out


def first_scrapes(prom_port: int, buses: list[str]) -> dict[str, float]:
    """pci_bus_id -> timestamp of the first sample Prometheus scraped of our Xid series."""
    query = 'inferwatch_xid_errors_total{xid="79"}[15m]'
    url = f"http://127.0.0.1:{prom_port}/api/v1/query?" + urllib.parse.urlencode({"query": query})
    doc = get_json(url) or {}
    out: dict[str, float] = {}
    for series in doc.get("data", {}).get("result", []):
        bus = series.get("metric", {}).get("pci_bus_id")
        values = series.get("values") or []
        if bus in buses and values:
            out[bus] = min(out.get(bus, float("inf")), float(values[0][0]))
    return out


def breakdown(
    trials: list[Trial], firing: dict[str, float], scrapes: dict[str, float]
) -> dict[str, Any]:
    """Split each measured latency at the daemon's 'alert firing' log line (inferwatch) and
    at Prometheus's first sample of the series and the alert's startsAt (Prometheus path)."""
    parts: dict[str, list[float]] = {}

    def add(name: str, value: float) -> None:
        parts.setdefault(name, []).append(value)

    for t in trials:
        if "warmup" in t.phase:
            continue
        if t.inferwatch_ms is not None and t.bus in firing:
            fired = 1000 * (firing[t.bus] - t.written_wall)
            add(f"inferwatch ({t.phase}): write -> 'alert firing' logged", fired)
            add(
                f"inferwatch ({t.phase}): 'alert firing' -> webhook received",
                t.inferwatch_ms - fired,
            )
        if t.alertmanager_ms is not None and t.bus in scrapes and t.am_starts_at is not None:
            scraped = 1000 * (scrapes[t.bus] - t.written_wall)
            active = 1000 * (t.am_starts_at - t.written_wall)
            add("prometheus: write -> first scrape holding the series", scraped)
            add("prometheus: that scrape -> alert active (evaluation, startsAt)", active - scraped)
            add(
                "prometheus: alert active -> alertmanager webhook received",
                t.alertmanager_ms - active,
            )
    return {k: summary(v) for k, v in parts.items()}


def rule_reloads(log_path: Path) -> dict[str, Any]:
    """How often the daemon (re)loaded its rules: once at start-up is normal."""
    stamps = []
    for line in log_path.read_text(errors="replace").splitlines():
        if '"rules loaded"' in line:
            try:
                stamps.append(json.loads(line)["timestamp"])
            except (ValueError, KeyError):
                continue
    return {"count": len(stamps), "first": stamps[:1], "last": stamps[-1:]}


# -- report --------------------------------------------------------------------------------------
def row(name: str, s: dict[str, Any], failed: int) -> str:
    if not s.get("n"):
        return f"| {name} | 0 | - | - | - | - | - | {failed} |"
    cells = " | ".join(f"{s[k]:.1f}" for k in ("min", "median", "p90", "p99", "max"))
    return f"| {name} | {s['n']} | {cells} | {failed} |"


def results(bench: Bench, load: dict[str, Any]) -> dict[str, Any]:
    measured = [t for t in bench.trials if "warmup" not in t.phase]
    series = {
        "inferwatch (alone)": [t.inferwatch_ms for t in measured if t.phase == "inferwatch"],
        "inferwatch (side by side, scraped at 1 s)": [
            t.inferwatch_ms for t in measured if t.phase == "side-by-side"
        ],
        f"prometheus {bench.args.interval} + alertmanager": [
            t.alertmanager_ms for t in measured if t.phase == "side-by-side"
        ],
        "inferwatch engine crash line (scraped at 1 s, incl. the 5 s crash window)": [
            t.inferwatch_ms for t in measured if t.phase == "engine-crash"
        ],
    }
    paths = {
        name: {
            **summary([v for v in vals if v is not None]),
            "timeouts": sum(v is None for v in vals),
        }
        for name, vals in series.items()
        if vals
    }
    firing = daemon_firing_times(bench.daemon_log) if bench.daemon_log else {}
    scrapes = first_scrapes(bench.prom_port, [t.bus for t in measured]) if bench.prom_port else {}
    return {
        "benchmark": "notify_latency",
        "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "host": {"cpus": os.cpu_count(), "platform": platform.platform(), "load": load},
        "ring_records": bench.ring_records,
        "source": {**bench.source, "daemon_path": str(bench.args.daemon_path or "")},
        "settings": {
            "trials": bench.args.trials,
            "side_by_side_trials": bench.args.side_trials,
            "crash_trials": bench.args.crash_trials,
            "gpus": "8 fake (8x-h100-sxm.json, every 2 s)",
            "warmup": bench.args.warmup,
            "gap_s": bench.args.gap,
            "jitter_s": bench.args.jitter,
            "rules": bench.args.rules,
            "prometheus_interval": bench.args.interval,
            "percentiles": "linear interpolation between closest ranks",
        },
        "paths_ms": paths,
        "breakdown_ms": breakdown(bench.trials, firing, scrapes),
        "daemon_rule_loads": rule_reloads(bench.daemon_log) if bench.daemon_log else None,
        "trials": [t.__dict__ for t in bench.trials],
    }


def print_table(doc: dict[str, Any]) -> None:
    print()
    print("| path | trials | min | median | p90 | p99 | max | timeouts |")
    print("|---|---|---|---|---|---|---|---|")
    for name, s in doc["paths_ms"].items():
        print(row(name, s, s["timeouts"]))
    print()
    print("| where the time goes (ms) | n | min | median | p90 | p99 | max |")
    print("|---|---|---|---|---|---|---|")
    for name, s in doc["breakdown_ms"].items():
        print(row(name, s, 0).rsplit(" | ", 1)[0] + " |")
    print(f"\nload (host CPU busy % over the run, all cores; load averages): {doc['host']['load']}")
    print(f"daemon rule loads (1 = start-up only): {doc['daemon_rule_loads']}")
    print(f"records in the kernel ring at the start: {doc['ring_records']}")


# -- main ----------------------------------------------------------------------------------------
@contextmanager
def stop_on_signals() -> Iterator[None]:
    """SIGTERM/SIGHUP end the run through the normal clean-up path."""

    def bail(signum: int, _frame: object) -> None:
        raise SystemExit(128 + signum)

    old = {s: signal.signal(s, bail) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--trials", type=int, default=50, help="inferwatch-only trials (50)")
    p.add_argument("--side-trials", type=int, default=50, help="side-by-side trials (50)")
    p.add_argument("--warmup", type=int, default=1, help="unmeasured trials per phase (1)")
    p.add_argument("--gap", type=float, default=0.5, help="seconds between trials (>= 0.5)")
    p.add_argument("--jitter", type=float, default=1.0, help="plus 0..JITTER s at random (1.0)")
    p.add_argument(
        "--rules",
        choices=["isolated", "shipped"],
        default="isolated",
        help="rule files: private copies (default) or the checkout's (see prepare_rules)",
    )
    p.add_argument(
        "--crash-trials",
        type=int,
        default=10,
        help=f"engine crash lines appended, inferwatch only (10; at most {2 * len(CRASH_LINES)})",
    )
    p.add_argument("--interval", default="1s", help="Prometheus scrape/evaluation interval")
    p.add_argument("--timeout", type=float, default=15.0, help="seconds to wait per webhook")
    p.add_argument("--prometheus", default=shutil.which("prometheus") or "prometheus")
    p.add_argument(
        "--alertmanager",
        default=shutil.which("prometheus-alertmanager") or "prometheus-alertmanager",
    )
    p.add_argument(
        "--out", "--json", type=Path, default=REPO / "bench" / "out" / "notify_latency.json"
    )
    p.add_argument("--keep", action="store_true", help="keep the temporary directory (logs)")
    p.add_argument(
        "--daemon-path",
        type=Path,
        help="run the daemon with PYTHONPATH=DIR (DIR/inferwatch: e.g. a commit's daemon/ from"
        " git archive, or a patched copy) instead of the checkout's daemon/",
    )
    args = p.parse_args(argv)
    args.gap = max(args.gap, 0.5)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if not (os.geteuid() == 0 and os.access("/dev/kmsg", os.W_OK)):
        print("needs root and a writable /dev/kmsg", file=sys.stderr)
        return 2
    tmp = Path(tempfile.mkdtemp(prefix="notify-latency-"))
    load: dict[str, Any] = {"before": list(os.getloadavg())}
    cpu_before = cpu_times()
    procs = Procs(tmp)
    try:
        with stop_on_signals(), Sink() as sink:
            bench = Bench(args, tmp, sink, procs)
            bench.start_daemon()
            if args.trials:
                bench.phase("inferwatch", args.trials, [IW_PATH], args.timeout)
            if args.side_trials:
                bench.start_prometheus()
                bench.phase("side-by-side", args.side_trials, [IW_PATH, AM_PATH], args.timeout)
            if args.crash_trials:
                bench.phase("engine-crash", args.crash_trials, [IW_PATH], args.timeout)
            load["after"] = list(os.getloadavg())
            busy, total = (b - a for a, b in zip(cpu_before, cpu_times(), strict=True))
            load["host_cpu_busy_pct"] = round(100 * busy / total, 1) if total else None
            daemon = next(p for n, p in procs.running if n == "inferwatch")
            load["daemon_cpu_s"] = process_cpu_s(daemon.pid)
            doc = results(bench, load)
    finally:
        procs.stop_all()
        if args.keep:
            print(f"logs kept in {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    print_table(doc)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=2) + "\n")
    print(f"results: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
