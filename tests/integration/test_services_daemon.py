"""`inferwatch run` watching a real loopback engine process: the service is up, the engine is
killed (one EngineDown reaches the webhook, the service's source stays up), it comes back on
its port (one resolution), with exactly these service_state events."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import free_port, wait_until
from integration import test_notify_e2e
from integration.daemon_proc import DaemonProc, start_daemon
from integration.test_notify_e2e import Sink

sink = test_notify_e2e.sink  # the webhook sink fixture, shared

pytestmark = [pytest.mark.integration]
ENGINE = Path(__file__).parents[1] / "fixtures" / "services" / "fake_engine.py"


def _engine(port: int, status: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, str(ENGINE), str(port), str(status)])


def _service(d: DaemonProc) -> dict[str, Any]:
    (service,) = d.get("/api/v1/status").json()["services"]
    assert isinstance(service, dict)
    return service


def _posts(sink: Sink, status: str) -> list[dict[str, Any]]:
    return [
        a
        for _, post in sink.posts
        for a in post.get("alerts", [])
        if a["labels"].get("alertname") == "EngineDown" and a["status"] == status
    ]


def test_engine_killed_and_back_pages_once_and_resolves(tmp_path: Path, sink: Sink) -> None:
    port = free_port()
    status = tmp_path / "status"
    (tmp_path / "engine.log").touch()
    config = tmp_path / "c.yaml"
    config.write_text(
        "kernel: {source: 'off'}\ngpus: {backend: 'off'}\n"
        f"engines:\n  - name: main\n    log: {tmp_path / 'engine.log'}\n"
        "services:\n"
        "  - name: api\n    engine: main\n    signature: fake_engine.py\n"
        f"    port: {port}\n    http_url: http://127.0.0.1:{port}/health\n"
        "    interval: 1s\n    startup_grace: 2s\n"
        "route:\n  receiver: hook\n  group_by: ['...']\n  group_wait: 0s\n"
        "  group_interval: 1s\n  repeat_interval: 4h\n"
        f"receivers:\n  - name: hook\n    webhook_configs:\n"
        f"      - url: http://127.0.0.1:{sink.port}/hook\n"
    )
    engine = _engine(port, status)
    d = start_daemon(tmp_path, "--config", str(config))
    try:
        d.wait_ready()
        wait_until(lambda: _service(d)["state"] == "up", 30, "the service up")
        engine.send_signal(signal.SIGKILL)
        engine.wait()
        wait_until(lambda: _posts(sink, "firing"), 30, "EngineDown at the webhook")
        service = _service(d)
        assert (service["state"], service["failed_check"]) == ("down", "signature")
        assert 'inferwatch_source_up{source="service:api"} 1' in d.metrics()
        engine = _engine(port, status)
        wait_until(lambda: _posts(sink, "resolved"), 30, "EngineDown resolved")
        (fired,) = _posts(sink, "firing")
        assert fired["labels"]["engine"] == "main" and fired["labels"]["service"] == "api"
        assert "wrong signature" in fired["annotations"]["diagnosis"]
        assert len(_posts(sink, "resolved")) == 1
        events = d.get("/api/v1/events?type=service_state").json()["events"]
        moves = sorted((e["at"], e["details"]["from"], e["details"]["to"]) for e in events)
        assert [(a, b) for _, a, b in moves] == [("unknown", "up"), ("up", "down"), ("down", "up")]
    finally:
        d.kill()
        if engine.poll() is None:
            engine.kill()
        engine.wait()
