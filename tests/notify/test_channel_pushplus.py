"""The PushPlus channel against a local emulator of ``/send`` (aiohttp on 127.0.0.1) answering
with the documented bodies: code 200, 903/900 (retry), 907/909 (permanent), 5xx and a hang."""

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
from inferwatch.notify.channels.pushplus import PushPlusConfig, PushPlusNotifier
from inferwatch.notify.retry import OutcomeKind
from notify.emulator import serve_posts

TOKEN = "PPCANARY-token-a1b2c3"


class Api:
    """Answers each send with the next scripted (status, body); ``None`` status hangs."""

    def __init__(self, *replies: tuple[int | None, Any]) -> None:
        self.replies = list(replies)
        self.got: list[Any] = []
        self.release = asyncio.Event()

    async def handle(self, request: web.Request) -> web.StreamResponse:
        body = json.loads(await request.read())
        self.got.append(body)
        if body.get("token") != TOKEN:
            return web.json_response({"code": 907, "msg": f"用户token错误 {body.get('token')}"})
        status, reply = self.replies[min(len(self.got), len(self.replies)) - 1]
        if status is None:
            await self.release.wait()
            status = 200
        return web.json_response(reply, status=status)


def serve(api: Api) -> AbstractAsyncContextManager[str]:
    return serve_posts(["/send"], api.handle, api.release, "/send")


OK = {"code": 200, "msg": "请求成功", "data": "serial-1"}
ALERT: dict[str, Any] = {
    "status": "firing",
    "labels": {"alertname": "EngineDown", "severity": "critical", "host": "gpu-a"},
    "annotations": {"summary": "Engine main crashed"},
    "startsAt": "2026-01-01T02:00:07Z",
    "endsAt": "0001-01-01T00:00:00Z",
}
PAYLOAD: dict[str, Any] = {"version": "4", "status": "firing", "alerts": [ALERT]}


async def send(api: Api, **cfg: Any) -> Any:
    async with serve(api) as url:
        n = build("pushplus", {"token": TOKEN, "api_url": url, **cfg})
        out = await asyncio.wait_for(n.notify(PAYLOAD), timeout=30)
        await n.aclose()
    return out


def test_success_markdown_with_channel_and_topic() -> None:
    api = Api((200, OK))
    out = asyncio.run(send(api, channel="wechat", topic="oncall", language="zh"))
    assert out.kind is OutcomeKind.OK
    body = api.got[0]
    assert body["template"] == "markdown" and body["channel"] == "wechat"
    assert body["topic"] == "oncall" and body["title"] == "[严重] EngineDown @ gpu-a"
    assert "Engine main crashed" in body["content"]


@pytest.mark.parametrize(("code", "kind"), [(900, OutcomeKind.RETRY), (903, OutcomeKind.RETRY),
                                            (905, OutcomeKind.PERMANENT),
                                            (909, OutcomeKind.PERMANENT)])  # fmt: skip
def test_body_codes(code: int, kind: OutcomeKind) -> None:
    out = asyncio.run(send(Api((200, {"code": code, "msg": "x", "data": None}))))
    assert out.kind is kind and str(code) in out.reason


def test_5xx_retries_and_timeout_may_have_been_delivered() -> None:
    out = asyncio.run(send(Api((503, {"code": 503}))))
    assert out.kind is OutcomeKind.RETRY and out.status == 503
    out = asyncio.run(
        send(Api((None, OK)), timeout=1.0)
    )  # 1 s: a loaded machine may take 0.3 s to connect
    assert out.kind is OutcomeKind.RETRY and out.maybe_delivered and "Timeout" in out.reason


def test_token_never_leaks(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    caplog.set_level(logging.WARNING, logger="httpx")  # as the daemon runs it (notify.md §4.2)
    (tmp_path / "token").write_text("PPCANARY-wrong\n")

    async def scenario() -> list[Any]:
        async with serve(Api((200, OK))) as url:
            n = PushPlusNotifier(PushPlusConfig(token_file=tmp_path / "token", api_url=url))
            bad = await n.notify(PAYLOAD)  # the API echoes the token back
            await n.aclose()
        dead = build(
            "pushplus", {"token": TOKEN, "api_url": f"http://127.0.0.1:{free_port()}/send"}
        )
        refused = await dead.notify(PAYLOAD)
        await dead.aclose()
        return [bad, refused]

    bad, refused = asyncio.run(scenario())
    assert bad.kind is OutcomeKind.PERMANENT and "907" in bad.reason
    assert refused.kind is OutcomeKind.RETRY
    for out in (bad, refused):
        assert "PPCANARY" not in out.reason and "PPCANARY" not in repr(out)
    ours = [r for r in caplog.records if r.name != "aiohttp.access"]
    assert all("PPCANARY" not in r.getMessage() for r in ours)


def test_config_validation_and_registry() -> None:
    assert "pushplus" in REGISTRY
    with pytest.raises(ValueError, match="exactly one"):
        PushPlusConfig()
