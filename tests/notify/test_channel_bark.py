"""The Bark channel against a local emulator of bark-server's ``/push`` (aiohttp on 127.0.0.1)
answering with the documented bodies: code 200, a 400 for an unknown key, 5xx and a hang."""

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
from inferwatch.notify.channels.bark import BarkConfig, BarkNotifier
from inferwatch.notify.retry import OutcomeKind
from notify.emulator import serve_posts

KEY = "BARKCANARY-devkey-71"


class BarkServer:
    """Answers each push with the next scripted (status, body); ``None`` status hangs."""

    def __init__(self, *replies: tuple[int | None, Any]) -> None:
        self.replies = list(replies)
        self.got: list[Any] = []
        self.release = asyncio.Event()

    async def handle(self, request: web.Request) -> web.StreamResponse:
        body = json.loads(await request.read())
        self.got.append(body)
        if body.get("device_key") != KEY:
            msg = f"failed to get device token: {body.get('device_key')}"
            return web.json_response({"code": 400, "message": msg, "timestamp": 1}, status=400)
        status, reply = self.replies[min(len(self.got), len(self.replies)) - 1]
        if status is None:
            await self.release.wait()
            status = 200
        return web.json_response(reply, status=status)


def serve(server: BarkServer) -> AbstractAsyncContextManager[str]:
    return serve_posts(["/push"], server.handle, server.release)


OK = {"code": 200, "message": "success", "timestamp": 1767225600}
ALERT: dict[str, Any] = {
    "status": "firing",
    "labels": {"alertname": "EngineDown", "severity": "critical", "host": "gpu-a"},
    "annotations": {"summary": "Engine main crashed"},
    "startsAt": "2026-01-01T02:00:07Z",
    "endsAt": "0001-01-01T00:00:00Z",
    "fingerprint": "5e2b0c9a",
}
PAYLOAD: dict[str, Any] = {"version": "4", "groupKey": '{}:{engine="main"}', "alerts": [ALERT]}


async def send(server: BarkServer, payload: dict[str, Any] = PAYLOAD, **cfg: Any) -> Any:
    async with serve(server) as url:
        n = build("bark", {"device_key": KEY, "url": url, **cfg})
        out = await asyncio.wait_for(n.notify(payload), timeout=30)
        await n.aclose()
    return out


@pytest.mark.parametrize(
    ("severity", "status", "level"),
    [("critical", "firing", "critical"), ("warning", "firing", "timeSensitive"),
     ("info", "firing", "active"), ("critical", "resolved", "passive")],
)  # fmt: skip
def test_level_by_severity_and_stable_id(severity: str, status: str, level: str) -> None:
    alert = {**ALERT, "status": status, "labels": {**ALERT["labels"], "severity": severity}}
    server = BarkServer((200, OK))
    out = asyncio.run(send(server, {**PAYLOAD, "alerts": [alert]}, sound="alarm"))
    assert out.kind is OutcomeKind.OK
    body = server.got[0]
    assert body["level"] == level and body["group"] == "inferwatch" and body["sound"] == "alarm"
    assert body["title"].endswith("EngineDown @ gpu-a") and "Engine main crashed" in body["body"]
    assert body["id"].startswith("iw-")


def test_firing_and_resolved_share_the_id() -> None:
    server = BarkServer((200, OK))
    asyncio.run(send(server))
    asyncio.run(send(server, {**PAYLOAD, "alerts": [{**ALERT, "status": "resolved"}]}))
    assert server.got[0]["id"] == server.got[1]["id"]


def test_body_level_failure_5xx_and_timeout() -> None:
    out = asyncio.run(send(BarkServer((200, {"code": 400, "message": "bad request"}))))
    assert out.kind is OutcomeKind.PERMANENT and "code 400" in out.reason
    out = asyncio.run(send(BarkServer((200, {"code": 500, "message": "push failed"}))))
    assert out.kind is OutcomeKind.RETRY
    out = asyncio.run(send(BarkServer((503, {"code": 503, "message": "unavailable"}))))
    assert out.kind is OutcomeKind.RETRY and out.status == 503
    out = asyncio.run(
        send(BarkServer((None, OK)), timeout=1.0)
    )  # 1 s: a loaded machine may take 0.3 s to connect
    assert out.kind is OutcomeKind.RETRY and out.maybe_delivered and "Timeout" in out.reason


def test_device_key_never_leaks(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    caplog.set_level(logging.WARNING, logger="httpx")  # as the daemon runs it (notify.md §4.2)
    (tmp_path / "key").write_text("BARKCANARY-wrong-key\n")

    async def scenario() -> list[Any]:
        async with serve(BarkServer((200, OK))) as url:
            n = BarkNotifier(BarkConfig(device_key_file=tmp_path / "key", url=url))
            denied = await n.notify(PAYLOAD)  # the server echoes the wrong key back
            await n.aclose()
        dead = build("bark", {"device_key": KEY, "url": f"http://127.0.0.1:{free_port()}"})
        refused = await dead.notify(PAYLOAD)
        await dead.aclose()
        return [denied, refused]

    denied, refused = asyncio.run(scenario())
    assert denied.kind is OutcomeKind.PERMANENT and denied.status == 400
    assert refused.kind is OutcomeKind.RETRY
    for out in (denied, refused):
        assert "BARKCANARY" not in out.reason and "BARKCANARY" not in repr(out)
    ours = [r for r in caplog.records if r.name != "aiohttp.access"]
    assert all("BARKCANARY" not in r.getMessage() for r in ours)


def test_config_validation_and_registry() -> None:
    assert "bark" in REGISTRY
    with pytest.raises(ValueError, match="exactly one"):
        BarkConfig()
