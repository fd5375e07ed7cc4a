"""The Feishu channel against a local emulator of the custom-bot hook (aiohttp on 127.0.0.1)
that checks the token and the body signature and answers with the documented bodies: code 0,
legacy StatusCode 0, 19021, 11232, 5xx and a hang."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import logging
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from conftest import free_port
from inferwatch.clock import FakeClock
from inferwatch.notify.channels import REGISTRY, build
from inferwatch.notify.channels.feishu import FeishuConfig, FeishuNotifier, sign
from inferwatch.notify.retry import OutcomeKind
from notify.emulator import serve_posts

TOKEN = "FSCANARY-hook-0b9e"
SECRET = "FSCANARY-secret-77"
NOW = 1767225600.0


class Hook:
    """Checks token, timestamp (±1 h of NOW) and sign, then answers with the next scripted
    (status, body); ``None`` status hangs."""

    def __init__(self, *replies: tuple[int | None, Any]) -> None:
        self.replies = list(replies)
        self.got: list[Any] = []
        self.release = asyncio.Event()

    async def handle(self, request: web.Request) -> web.StreamResponse:
        body = json.loads(await request.read())
        self.got.append(body)
        if request.match_info["token"] != TOKEN:
            return web.json_response({"code": 19001, "msg": "param invalid: incoming webhook "
                                      f"access token invalid {request.path}", "data": {}})  # fmt: skip
        ts = body.get("timestamp", "0")
        key = f"{ts}\n{SECRET}".encode()
        expected = base64.b64encode(hmac.new(key, b"", hashlib.sha256).digest()).decode()
        if abs(int(ts) - NOW) > 3600 or body.get("sign") != expected:
            return web.json_response({"code": 19021, "msg": "sign match fail or timestamp is not "
                                      "within one hour from current time", "data": {}})  # fmt: skip
        status, reply = self.replies[min(len(self.got), len(self.replies)) - 1]
        if status is None:
            await self.release.wait()
            status = 200
        return web.json_response(reply, status=status)


def serve(hook: Hook) -> AbstractAsyncContextManager[str]:
    return serve_posts(
        ["/open-apis/bot/v2/hook/{token}"], hook.handle, hook.release, "/open-apis/bot/v2/hook"
    )


OK = {"code": 0, "msg": "success", "data": {}}
ALERT: dict[str, Any] = {
    "status": "firing",
    "labels": {"alertname": "EngineDown", "severity": "warning", "host": "gpu-a"},
    "annotations": {"summary": "Engine main stalled"},
    "startsAt": "2026-01-01T02:00:07Z",
    "endsAt": "0001-01-01T00:00:00Z",
}
PAYLOAD: dict[str, Any] = {"version": "4", "status": "firing", "alerts": [ALERT]}


async def send(hook: Hook, clock_at: float = NOW, **cfg: Any) -> Any:
    async with serve(hook) as url:
        config = FeishuConfig.from_mapping({"token": TOKEN, "secret": SECRET, "api_url": url,
                                            **cfg})  # fmt: skip
        n = FeishuNotifier(config, clock=FakeClock(clock_at))
        out = await asyncio.wait_for(n.notify(PAYLOAD), timeout=30)
        await n.aclose()
    return out


def test_documented_sign_vector() -> None:
    assert sign("feishu-secret-demo", 1767225600) == "ovpHRGbZ2LzSqoNC2qugrGOEqXExxpdrJMB8sYAhl8Q="


def test_signed_text_and_card_succeed_including_legacy_answer() -> None:
    hook = Hook((200, OK))
    assert asyncio.run(send(hook)).kind is OutcomeKind.OK
    body = hook.got[0]
    assert body["timestamp"] == "1767225600" and body["msg_type"] == "text"
    assert body["content"]["text"].startswith("[WARNING] EngineDown @ gpu-a")
    hook = Hook((200, {"StatusCode": 0, "StatusMessage": "success"}))
    assert asyncio.run(send(hook, msg_type="interactive")).kind is OutcomeKind.OK
    card = hook.got[0]["card"]
    assert card["header"]["template"] == "orange"
    assert "Engine main stalled" in card["elements"][0]["content"]


def test_sign_failure_is_permanent_and_frequency_limit_retries() -> None:
    out = asyncio.run(send(Hook((200, OK)), clock_at=NOW + 7200))
    assert out.kind is OutcomeKind.PERMANENT and "19021" in out.reason
    limited = {"code": 11232, "msg": "frequency limited psm[lark.oapi.app_platform_runtime]"}
    out = asyncio.run(send(Hook((200, limited))))
    assert out.kind is OutcomeKind.RETRY and "11232" in out.reason


def test_5xx_429_retry_and_timeout_may_have_been_delivered() -> None:
    out = asyncio.run(send(Hook((502, {"code": 9499, "msg": "bad gateway"}))))
    assert out.kind is OutcomeKind.RETRY and out.status == 502
    out = asyncio.run(send(Hook((429, {"code": 11232, "msg": "frequency limited"}))))
    assert out.kind is OutcomeKind.RETRY and out.status == 429
    out = asyncio.run(
        send(Hook((None, OK)), timeout=1.0)
    )  # 1 s: a loaded machine may take 0.3 s to connect
    assert out.kind is OutcomeKind.RETRY and out.maybe_delivered and "Timeout" in out.reason


def test_token_and_secret_never_leak(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    caplog.set_level(logging.WARNING, logger="httpx")  # as the daemon runs it (notify.md §4.2)
    (tmp_path / "token").write_text("FSCANARY-wrong-token\n")

    async def scenario() -> list[Any]:
        async with serve(Hook((200, OK))) as url:
            config = FeishuConfig(token_file=tmp_path / "token", secret=SECRET, api_url=url)
            n = FeishuNotifier(config, clock=FakeClock(NOW))
            invalid = await n.notify(PAYLOAD)  # the hook echoes its path back
            await n.aclose()
        dead = build("feishu", {"token": TOKEN, "secret": SECRET,
                                "api_url": f"http://127.0.0.1:{free_port()}/hook"})  # fmt: skip
        refused = await dead.notify(PAYLOAD)
        await dead.aclose()
        return [invalid, refused]

    invalid, refused = asyncio.run(scenario())
    assert invalid.kind is OutcomeKind.PERMANENT and "19001" in invalid.reason
    assert refused.kind is OutcomeKind.RETRY
    for out in (invalid, refused):
        assert "FSCANARY" not in out.reason and "FSCANARY" not in repr(out)
    ours = [r for r in caplog.records if r.name != "aiohttp.access"]
    assert all("FSCANARY" not in r.getMessage() for r in ours)


def test_config_validation_and_registry() -> None:
    assert "feishu" in REGISTRY
    with pytest.raises(ValueError, match="exactly one"):
        FeishuConfig()
    with pytest.raises(ValueError, match="msg_type"):
        FeishuConfig(token="t" * 8, msg_type="post")  # type: ignore[arg-type]
