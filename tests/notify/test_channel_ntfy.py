"""The ntfy channel against a local emulator of an ntfy server (aiohttp on 127.0.0.1) answering
with the documented bodies: the message JSON, 42901 limits, 401, 5xx and a hang."""

from __future__ import annotations

import asyncio
import json
import logging
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from conftest import free_port
from inferwatch.notify.channels import REGISTRY, build
from inferwatch.notify.channels.ntfy import NtfyConfig, NtfyNotifier
from inferwatch.notify.retry import OutcomeKind
from notify.emulator import serve_posts

TOPIC = "NTFYCANARY-topic-8c1e"
TOKEN = "tk_NTFYCANARYtoken55"


class Server:
    """Answers each publish with the next scripted (status, body); ``None`` status hangs."""

    def __init__(self, *replies: tuple[int | None, Any]) -> None:
        self.replies = list(replies)
        self.got: list[tuple[dict[str, str], Any]] = []
        self.release = asyncio.Event()

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.got.append((dict(request.headers), json.loads(await request.read())))
        status, body = self.replies[min(len(self.got), len(self.replies)) - 1]
        if status is None:
            await self.release.wait()
            status = 200
        return web.json_response(body, status=status)


def serve(server: Server) -> AbstractAsyncContextManager[str]:
    return serve_posts(["/"], server.handle, server.release)


OK = {"id": "sPs71M8A2T", "time": 1767225600, "expires": 1767268800, "event": "message",
      "topic": TOPIC, "message": "x"}  # fmt: skip
ALERT: dict[str, Any] = {
    "status": "firing",
    "labels": {"alertname": "EngineDown", "severity": "critical", "host": "gpu-a"},
    "annotations": {"summary": "Engine main crashed"},
    "startsAt": "2026-01-01T02:00:07Z",
    "endsAt": "0001-01-01T00:00:00Z",
}
PAYLOAD: dict[str, Any] = {"version": "4", "status": "firing", "alerts": [ALERT]}


async def send(server: Server, payload: dict[str, Any] = PAYLOAD, key: str | None = None,
               **cfg: Any) -> Any:  # fmt: skip
    async with serve(server) as url:
        n = build("ntfy", {"topic": TOPIC, "url": url, **cfg})
        out = await asyncio.wait_for(n.notify(payload, idempotency_key=key), timeout=30)
        await n.aclose()
    return out


@pytest.mark.parametrize(
    ("severity", "status", "priority", "tag"),
    [("critical", "firing", 5, "rotating_light"), ("warning", "firing", 4, "warning"),
     ("info", "firing", 3, "information_source"), ("critical", "resolved", 2, "white_check_mark")],
)  # fmt: skip
def test_priority_and_tags_by_severity(severity: str, status: str, priority: int, tag: str) -> None:
    alert = {**ALERT, "status": status, "labels": {**ALERT["labels"], "severity": severity}}
    server = Server((200, OK))
    out = asyncio.run(send(server, {**PAYLOAD, "alerts": [alert]}, key="abc123", token=TOKEN))
    assert out.kind is OutcomeKind.OK
    headers, body = server.got[0]
    assert body["topic"] == TOPIC and body["priority"] == priority and body["tags"] == [tag]
    assert body["title"].endswith("EngineDown @ gpu-a")
    assert headers["Authorization"] == f"Bearer {TOKEN}" and headers["X-Sequence-ID"] == "abc123"


def test_rate_limit_and_5xx_retry_auth_errors_are_permanent() -> None:
    limited = {"code": 42901, "http": 429, "error": "limit reached: too many requests",
               "link": "https://ntfy.sh/docs/publish/#limitations"}  # fmt: skip
    out = asyncio.run(send(Server((429, limited))))
    assert out.kind is OutcomeKind.RETRY and "42901" in out.reason
    out = asyncio.run(send(Server((503, {"code": 50301, "http": 503, "error": "down"}))))
    assert out.kind is OutcomeKind.RETRY and out.status == 503
    denied = {"code": 40101, "http": 401, "error": "unauthorized"}
    out = asyncio.run(send(Server((401, denied))))
    assert out.kind is OutcomeKind.PERMANENT and "40101 unauthorized" in out.reason


def test_timeout_may_have_been_delivered() -> None:
    out = asyncio.run(
        send(Server((None, OK)), timeout=1.0)
    )  # 1 s: a loaded machine may take 0.3 s to connect
    assert out.kind is OutcomeKind.RETRY and out.maybe_delivered and "Timeout" in out.reason


def test_topic_and_token_never_leak(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    caplog.set_level(logging.WARNING, logger="httpx")  # as the daemon runs it (notify.md §4.2)
    (tmp_path / "topic").write_text("NTFYCANARY-from-file\n")
    (tmp_path / "token").write_text("tk_NTFYCANARYfile\n")
    echo = {"code": 40301, "http": 403, "error": f"forbidden {TOPIC} {TOKEN}"}

    async def scenario() -> list[Any]:
        server = Server((403, echo))
        async with serve(server) as url:
            n = NtfyNotifier(NtfyConfig(topic_file=tmp_path / "topic", url=url,
                                        token_file=tmp_path / "token"))  # fmt: skip
            denied = await n.notify(PAYLOAD)
            await n.aclose()
        assert server.got[0][1]["topic"] == "NTFYCANARY-from-file"
        dead = build("ntfy", {"topic": TOPIC, "url": f"http://127.0.0.1:{free_port()}"})
        refused = await dead.notify(PAYLOAD)
        await dead.aclose()
        return [denied, refused]

    denied, refused = asyncio.run(scenario())
    assert denied.kind is OutcomeKind.PERMANENT and refused.kind is OutcomeKind.RETRY
    for out in (denied, refused):
        assert "NTFYCANARY" not in out.reason and "NTFYCANARY" not in repr(out)
    ours = [r for r in caplog.records if r.name != "aiohttp.access"]
    assert all("NTFYCANARY" not in r.getMessage() for r in ours)


def test_config_validation_and_registry() -> None:
    assert "ntfy" in REGISTRY
    with pytest.raises(ValueError, match="exactly one"):
        NtfyConfig()
    with pytest.raises(ValueError, match="at most one"):
        NtfyConfig(topic="t" * 8, token="x" * 8, token_file=Path("/nonexistent"))
