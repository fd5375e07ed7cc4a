"""The Gotify channel against a local emulator of ``POST /message`` (aiohttp on 127.0.0.1)
answering with the documented bodies: the stored message, 401 error JSON, 5xx and a hang."""

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
from inferwatch.notify.channels.gotify import GotifyConfig, GotifyNotifier
from inferwatch.notify.retry import OutcomeKind
from notify.emulator import serve_posts

TOKEN = "GOTCANARY-AppTok9"


class Server:
    """Answers each message with the next scripted (status, body); ``None`` status hangs."""

    def __init__(self, *replies: tuple[int | None, Any]) -> None:
        self.replies = list(replies)
        self.got: list[tuple[dict[str, str], Any]] = []
        self.release = asyncio.Event()

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.got.append((dict(request.headers), json.loads(await request.read())))
        key = request.headers.get("X-Gotify-Key")
        if key != TOKEN:
            err = {"error": "Unauthorized", "errorCode": 401,
                   "errorDescription": f"you need to provide a valid access token, not {key}"}  # fmt: skip
            return web.json_response(err, status=401)
        status, body = self.replies[min(len(self.got), len(self.replies)) - 1]
        if status is None:
            await self.release.wait()
            status = 200
        return web.json_response(body, status=status)


def serve(server: Server) -> AbstractAsyncContextManager[str]:
    return serve_posts(["/message"], server.handle, server.release)


OK = {"id": 25, "appid": 5, "message": "x", "title": "y", "priority": 10,
      "date": "2026-01-01T02:00:08Z"}  # fmt: skip
ALERT: dict[str, Any] = {
    "status": "firing",
    "labels": {"alertname": "EngineDown", "severity": "critical", "host": "gpu-a"},
    "annotations": {"summary": "Engine main crashed"},
    "startsAt": "2026-01-01T02:00:07Z",
    "endsAt": "0001-01-01T00:00:00Z",
}
PAYLOAD: dict[str, Any] = {"version": "4", "status": "firing", "alerts": [ALERT]}


async def send(server: Server, payload: dict[str, Any] = PAYLOAD, **cfg: Any) -> Any:
    async with serve(server) as url:
        n = build("gotify", {"token": TOKEN, "url": url, **cfg})
        out = await asyncio.wait_for(n.notify(payload), timeout=30)
        await n.aclose()
    return out


@pytest.mark.parametrize(("severity", "status", "priority"),
                         [("critical", "firing", 10), ("warning", "firing", 8),
                          ("info", "firing", 4), ("critical", "resolved", 2)])  # fmt: skip
def test_priority_by_severity_markdown(severity: str, status: str, priority: int) -> None:
    alert = {**ALERT, "status": status, "labels": {**ALERT["labels"], "severity": severity}}
    server = Server((200, OK))
    assert asyncio.run(send(server, {**PAYLOAD, "alerts": [alert]})).kind is OutcomeKind.OK
    headers, body = server.got[0]
    assert headers["X-Gotify-Key"] == TOKEN and body["priority"] == priority
    assert body["extras"]["client::display"]["contentType"] == "text/markdown"
    assert body["title"].endswith("EngineDown @ gpu-a")


def test_errors_5xx_and_timeout() -> None:
    bad = {
        "error": "Bad Request",
        "errorCode": 400,
        "errorDescription": "Field 'message' is required",
    }
    out = asyncio.run(send(Server((400, bad))))
    assert out.kind is OutcomeKind.PERMANENT and "message' is required" in out.reason
    out = asyncio.run(send(Server((503, {"error": "down"}))))
    assert out.kind is OutcomeKind.RETRY and out.status == 503
    out = asyncio.run(
        send(Server((None, OK)), timeout=1.0)
    )  # 1 s: a loaded machine may take 0.3 s to connect
    assert out.kind is OutcomeKind.RETRY and out.maybe_delivered and "Timeout" in out.reason


def test_token_never_leaks(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    caplog.set_level(logging.WARNING, logger="httpx")  # as the daemon runs it (notify.md §4.2)
    (tmp_path / "token").write_text("GOTCANARY-wrong\n")

    async def scenario() -> list[Any]:
        async with serve(Server((200, OK))) as url:
            n = GotifyNotifier(GotifyConfig(url=url, token_file=tmp_path / "token"))
            denied = await n.notify(PAYLOAD)  # the server echoes the key back
            await n.aclose()
        dead = build("gotify", {"token": TOKEN, "url": f"http://127.0.0.1:{free_port()}"})
        refused = await dead.notify(PAYLOAD)
        await dead.aclose()
        return [denied, refused]

    denied, refused = asyncio.run(scenario())
    assert denied.kind is OutcomeKind.PERMANENT and denied.status == 401
    assert refused.kind is OutcomeKind.RETRY
    for out in (denied, refused):
        assert "GOTCANARY" not in out.reason and "GOTCANARY" not in repr(out)
    ours = [r for r in caplog.records if r.name != "aiohttp.access"]
    assert all("GOTCANARY" not in r.getMessage() for r in ours)


def test_config_validation_and_registry() -> None:
    assert "gotify" in REGISTRY
    with pytest.raises(ValueError, match="url"):
        build("gotify", {"token": TOKEN})
    with pytest.raises(ValueError, match="exactly one"):
        GotifyConfig(url="http://127.0.0.1:1")
