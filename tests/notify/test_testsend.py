"""notify-test's sender against a real webhook receiver on 127.0.0.1: one clearly-marked test
alert per integration, each service's own verdict, unknown receivers named."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from conftest import free_port
from inferwatch.config.models import Config
from inferwatch.configfile import load_config
from inferwatch.notify.testsend import TEST_ALERTNAME, UnknownReceiverError, send_test


class Sink:
    """A webhook receiver: records each POST; the path picks the answer (``/status/503``)."""

    def __init__(self) -> None:
        self.posts: list[tuple[str, dict[str, str], dict[str, Any]]] = []
        self.port = free_port()
        sink = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                sink.posts.append((self.path, dict(self.headers), json.loads(body)))
                code = int(self.path.rsplit("/", 1)[1]) if "/status/" in self.path else 200
                self.send_response(code)
                self.end_headers()

            def log_message(self, *_args: object) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"


@pytest.fixture
def sink() -> Iterator[Sink]:
    s = Sink()
    s.thread.start()
    try:
        yield s
    finally:
        s.server.shutdown()
        s.server.server_close()


def config_with(tmp_path: Path, *urls: str) -> Config:
    hooks = "".join(f"      - url: {u}\n" for u in urls)
    path = tmp_path / "c.yaml"
    path.write_text(
        "external_labels:\n  host: gpu-box\n"
        "route:\n  receiver: phone\n"
        "receivers:\n  - name: phone\n    webhook_configs:\n"
        f"{hooks}"
        "  - name: team\n    console_configs: [{}]\n"
    )
    return load_config(path)


def test_each_integration_gets_one_marked_test_alert(tmp_path: Path, sink: Sink) -> None:
    config = config_with(tmp_path, sink.url("/a"), sink.url("/b"))
    verdicts = asyncio.run(send_test(config, "phone", now=1_790_000_000.0))
    assert [(v.integration, v.text(), v.ok) for v in verdicts] == [
        ("webhook", "ok", True),
        ("webhook/1", "ok", True),
    ]
    assert sorted(p for p, _, _ in sink.posts) == ["/a", "/b"]
    _, _, post = sink.posts[0]
    assert post["version"] == "4" and post["receiver"] == "phone"
    assert post["status"] == "firing"
    (alert,) = post["alerts"]
    assert alert["labels"] == {
        "alertname": TEST_ALERTNAME,
        "severity": "info",
        "host": "gpu-box",
    }
    assert "not a real alert" in alert["annotations"]["summary"]
    assert alert["annotations"]["summary_zh"] == "inferwatch 测试通知：这不是真实告警"
    assert alert["startsAt"] == "2026-09-21T14:13:20Z"
    keys = {h.get("Idempotency-Key") for _, h, _ in sink.posts}
    assert len(keys) == 2 and None not in keys, "one key per integration and run"


def test_failures_carry_the_services_verdict(tmp_path: Path, sink: Sink) -> None:
    config = config_with(tmp_path, sink.url("/status/503"), sink.url("/status/400"))
    verdicts = asyncio.run(send_test(config, "phone"))
    kinds = [v.text().split(":", 1)[0] for v in verdicts]
    assert kinds == ["retry", "permanent"]
    assert not any(v.ok for v in verdicts)
    assert "503" in verdicts[0].text() and "400" in verdicts[1].text()


def test_a_refused_connection_is_retry_not_a_crash(tmp_path: Path) -> None:
    config = config_with(tmp_path, f"http://127.0.0.1:{free_port()}/gone")
    (verdict,) = asyncio.run(send_test(config, "phone"))
    assert verdict.text().startswith("retry: ")


def test_a_second_run_gets_a_new_idempotency_key(tmp_path: Path, sink: Sink) -> None:
    config = config_with(tmp_path, sink.url("/a"))
    asyncio.run(send_test(config, "phone"))
    asyncio.run(send_test(config, "phone"))
    keys = [h.get("Idempotency-Key") for _, h, _ in sink.posts]
    assert len(keys) == 2 and keys[0] != keys[1]


def test_unknown_receiver_names_the_known_ones(tmp_path: Path) -> None:
    config = config_with(tmp_path, "http://127.0.0.1:1/x")
    with pytest.raises(UnknownReceiverError) as info:
        asyncio.run(send_test(config, "pager"))
    assert info.value.known == ["phone", "team"]
    assert "phone, team" in str(info.value)


def test_console_receiver_is_ok_without_network(tmp_path: Path) -> None:
    config = config_with(tmp_path, "http://127.0.0.1:1/x")
    (verdict,) = asyncio.run(send_test(config, "team"))
    assert (verdict.integration, verdict.text()) == ("console", "ok")
