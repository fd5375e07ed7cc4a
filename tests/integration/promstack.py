"""Prometheus, Alertmanager, ``inferwatch demo`` and a webhook sink on free loopback ports, for
the fleet and dashboard tests: the configs are deploy/'s own, with only addresses, intervals
and the webhook URL rewritten. Debian's binaries (scripts/install-test-deps.sh)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import yaml

from conftest import REPO, free_port, require_tool, wait_until

DEPLOY = REPO / "deploy"


def get_json(url: str, **params: str) -> Any:
    try:
        resp = httpx.get(url, params=params, timeout=5.0, trust_env=False)
    except httpx.HTTPError:
        return None
    return resp.json() if resp.status_code == 200 else None


@dataclass
class Stack:
    """Processes started for one test, each logging to a file in ``tmp``; stopped at the end."""

    tmp: Path
    procs: list[tuple[str, subprocess.Popen[bytes]]] = field(default_factory=list)

    def start(self, name: str, cmd: list[str]) -> None:
        with (self.tmp / f"{name}.log").open("wb") as out:
            proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, cwd=self.tmp)
        self.procs.append((name, proc))

    def check(self) -> None:
        for name, proc in self.procs:
            if proc.poll() is not None:
                tail = (self.tmp / f"{name}.log").read_text(errors="replace")[-3000:]
                raise AssertionError(f"{name} exited with {proc.returncode}:\n{tail}")

    def ready(self, url: str, what: str, timeout: float = 60.0) -> None:
        def up() -> bool:
            self.check()
            try:
                return httpx.get(url, timeout=2.0, trust_env=False).status_code == 200
            except httpx.HTTPError:
                return False

        wait_until(up, timeout, what)

    def stop(self) -> None:
        for _, proc in reversed(self.procs):
            if proc.poll() is None:
                proc.terminate()
        for _, proc in reversed(self.procs):
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)


@contextmanager
def stack(tmp: Path) -> Iterator[Stack]:
    s = Stack(tmp)
    try:
        yield s
    finally:
        s.stop()


def start_demo(s: Stack, duration: float = 180.0) -> int:
    """``inferwatch demo`` on a free port; returns the port once /metrics answers."""
    port = free_port()
    s.start("demo", [sys.executable, "-m", "inferwatch", "demo", "--duration", str(duration),
                     "--listen", f"127.0.0.1:{port}", "--log-level", "warning"])  # fmt: skip
    s.ready(f"http://127.0.0.1:{port}/metrics", "the demo's /metrics")
    return port


def start_alertmanager(s: Stack, hook: str) -> str:
    """deploy/alertmanager/alertmanager.yml with its webhook pointed at ``hook``; the base URL."""
    binary = require_tool("prometheus-alertmanager")
    config = yaml.safe_load((DEPLOY / "alertmanager" / "alertmanager.yml").read_text())
    for receiver in config["receivers"]:
        for hook_config in receiver.get("webhook_configs", []):
            hook_config["url"] = hook
    path = s.tmp / "alertmanager.yml"
    path.write_text(yaml.safe_dump(config))
    port = free_port()
    s.start("alertmanager", [binary, f"--config.file={path}", f"--storage.path={s.tmp / 'am'}",
                             f"--web.listen-address=127.0.0.1:{port}", "--cluster.listen-address=",
                             "--log.level=warn"])  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    s.ready(f"{base}/-/ready", "alertmanager")
    return base


def start_prometheus(
    s: Stack,
    targets: list[tuple[str, dict[str, str]]],
    alertmanager: str | None = None,
    daemon_notifies: str | None = None,
) -> str:
    """deploy/prometheus/prometheus.yml (its rule files copied beside it) scraping ``targets``
    (address, target labels) every second; ``daemon_notifies``: the regex of instances whose
    alerts it drops (the file's example otherwise). Returns the base URL once every target
    is up."""
    binary = require_tool("prometheus")
    config = yaml.safe_load((DEPLOY / "prometheus" / "prometheus.yml").read_text())
    config["global"] = {
        "scrape_interval": "1s",
        "scrape_timeout": "1s",
        "evaluation_interval": "1s",
    }
    for name in config["rule_files"]:
        shutil.copyfile(DEPLOY / "prometheus" / name, s.tmp / name)
    (job,) = config["scrape_configs"]
    job["static_configs"] = [{"targets": [addr], "labels": labels} for addr, labels in targets]
    if daemon_notifies:
        (drop,) = [
            r for r in config["alerting"]["alert_relabel_configs"] if r.get("action") == "drop"
        ]
        drop["regex"] = daemon_notifies
    if alertmanager:
        am_target = alertmanager.removeprefix("http://")
        config["alerting"]["alertmanagers"] = [{"static_configs": [{"targets": [am_target]}]}]
    else:
        del config["alerting"]
    path = s.tmp / "prometheus.yml"
    path.write_text(yaml.safe_dump(config))
    port = free_port()
    s.start("prometheus", [binary, f"--config.file={path}", f"--storage.tsdb.path={s.tmp / 'tsdb'}",
                           f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"])  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    s.ready(f"{base}/-/ready", "prometheus")

    def scraping() -> bool:
        s.check()
        doc = get_json(f"{base}/api/v1/targets") or {}
        up = [t for t in doc.get("data", {}).get("activeTargets", []) if t["health"] == "up"]
        return len(up) == len(targets)

    wait_until(scraping, 30, "prometheus to scrape every target")
    return base


class Sink:
    """A loopback HTTP server keeping every JSON body POSTed to it (Alertmanager's webhook)."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        sink = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()
                with sink.lock:
                    sink.bodies.append(json.loads(body))

            def log_message(self, *_args: object) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def firing(self, alertname: str) -> list[dict[str, Any]]:
        """The firing alerts named ``alertname`` received so far."""
        with self.lock:
            return [
                a
                for body in self.bodies
                for a in body.get("alerts", [])
                if a.get("status") == "firing" and a["labels"].get("alertname") == alertname
            ]

    def __enter__(self) -> Sink:
        self.thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
