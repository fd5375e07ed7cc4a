"""The ServerChan channel against a local emulator of its send API (aiohttp on 127.0.0.1)
answering with the documented bodies: code 0, a refusal on HTTP 200, 5xx and a hang."""

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
from inferwatch.notify.channels.serverchan import ServerChanConfig, ServerChanNotifier
from inferwatch.notify.retry import OutcomeKind
from notify.emulator import serve_posts

KEY = "SCTSCCANARY0011aabb"
SC3_KEY = "sctp4242tSCCANARY3key"


class Api:
    """Answers each send with the next scripted (status, body); ``None`` status hangs."""

    def __init__(self, *replies: tuple[int | None, Any]) -> None:
        self.replies = list(replies)
        self.got: list[tuple[str, Any]] = []
        self.release = asyncio.Event()

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.got.append((request.path, json.loads(await request.read())))
        if request.match_info["key"] not in (KEY, SC3_KEY):
            return web.json_response({"code": 40001, "message": f"bad pushkey {request.path}"})
        status, body = self.replies[min(len(self.got), len(self.replies)) - 1]
        if status is None:
            await self.release.wait()
            status = 200
        return web.json_response(body, status=status)


def serve(api: Api) -> AbstractAsyncContextManager[str]:
    return serve_posts(["/{key}.send", "/send/{key}.send"], api.handle, api.release)


OK = {"code": 0, "message": "", "data": {"pushid": "1", "readkey": "r"}}
ALERT: dict[str, Any] = {
    "status": "firing",
    "labels": {"alertname": "GpuXidFatalMemoryErrorOnDevice", "severity": "critical",
               "host": "gpu-host-a"},
    "annotations": {"summary": "Xid 79 on GPU 3"},
    "startsAt": "2026-01-01T02:00:07Z",
    "endsAt": "0001-01-01T00:00:00Z",
}  # fmt: skip
PAYLOAD: dict[str, Any] = {"version": "4", "status": "firing", "alerts": [ALERT]}


async def send(api: Api, key: str = KEY, **cfg: Any) -> Any:
    async with serve(api) as url:
        n = build("serverchan", {"sendkey": key, "api_url": url, **cfg})
        out = await asyncio.wait_for(n.notify(PAYLOAD), timeout=30)
        await n.aclose()
    return out


def test_turbo_and_sc3_success_with_short_title() -> None:
    api = Api((200, OK))
    assert asyncio.run(send(api, channel="9|66")).kind is OutcomeKind.OK
    path, body = api.got[0]
    assert path == f"/{KEY}.send" and body["channel"] == "9|66"
    assert len(body["title"]) <= 32 and body["title"].startswith("[CRITICAL]")
    assert "Xid 79 on GPU 3" in body["desp"]
    api = Api((200, OK))
    assert asyncio.run(send(api, key=SC3_KEY)).kind is OutcomeKind.OK
    assert api.got[0][0] == f"/send/{SC3_KEY}.send"
    default = ServerChanConfig(sendkey=SC3_KEY).endpoint()
    assert default.startswith("https://4242.push.ft07.com/send/")


def test_refusal_on_200_is_permanent_5xx_and_timeout_retry() -> None:
    out = asyncio.run(send(Api((200, {"code": 40001, "message": "quota exceeded"}))))
    assert out.kind is OutcomeKind.PERMANENT and "40001" in out.reason
    out = asyncio.run(send(Api((502, {"code": 502}))))
    assert out.kind is OutcomeKind.RETRY and out.status == 502
    out = asyncio.run(
        send(Api((None, OK)), timeout=1.0)
    )  # 1 s: a loaded machine may take 0.3 s to connect
    assert out.kind is OutcomeKind.RETRY and out.maybe_delivered and "Timeout" in out.reason


def test_sendkey_never_leaks(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    caplog.set_level(logging.WARNING, logger="httpx")  # as the daemon runs it (notify.md §4.2)
    (tmp_path / "key").write_text("SCTSCCANARYwrong\n")

    async def scenario() -> list[Any]:
        async with serve(Api((200, OK))) as url:
            n = ServerChanNotifier(ServerChanConfig(sendkey_file=tmp_path / "key", api_url=url))
            bad = await n.notify(PAYLOAD)  # the API echoes its path back
            await n.aclose()
        dead = build("serverchan", {"sendkey": KEY, "api_url": f"http://127.0.0.1:{free_port()}"})
        refused = await dead.notify(PAYLOAD)
        await dead.aclose()
        return [bad, refused]

    bad, refused = asyncio.run(scenario())
    assert bad.kind is OutcomeKind.PERMANENT and refused.kind is OutcomeKind.RETRY
    for out in (bad, refused):
        assert "SCCANARY" not in out.reason and "SCCANARY" not in repr(out)
    ours = [r for r in caplog.records if r.name != "aiohttp.access"]
    assert all("SCCANARY" not in r.getMessage() for r in ours)


def test_config_validation_and_registry() -> None:
    assert "serverchan" in REGISTRY
    with pytest.raises(ValueError, match="exactly one"):
        ServerChanConfig()
