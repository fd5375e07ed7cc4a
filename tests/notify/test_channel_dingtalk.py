"""The DingTalk channel against a local emulator of the custom-robot API (aiohttp on 127.0.0.1)
that checks the token and the signature and answers with the documented bodies: errcode 0,
310000 (sign not match, invalid timestamp), 130101, 5xx and a hang."""

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
from inferwatch.notify.channels.dingtalk import DingTalkConfig, DingTalkNotifier, sign
from inferwatch.notify.retry import OutcomeKind
from notify.emulator import serve_posts

TOKEN = "DTCANARY-token-5d1f0a"
SECRET = "SECDTCANARY0123456789"
NOW = 1767225600.0
PATH = "/robot/send"


class Robot:
    """Checks token, timestamp (±1 h of NOW) and sign, then answers with the next scripted
    (status, body); ``None`` status hangs."""

    def __init__(self, *replies: tuple[int | None, Any]) -> None:
        self.replies = list(replies)
        self.got: list[tuple[dict[str, str], Any]] = []
        self.release = asyncio.Event()

    def security(self, query: Any) -> str | None:
        if query.get("access_token") != TOKEN:
            return "token is not exist"
        ts = int(query.get("timestamp", "0"))
        if abs(ts / 1000 - NOW) > 3600:
            return "invalid timestamp"
        expected = hmac.new(SECRET.encode(), f"{ts}\n{SECRET}".encode(), hashlib.sha256)
        if query.get("sign") != base64.b64encode(expected.digest()).decode():
            return f"sign not match, query={dict(query)}"
        return None

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.got.append((dict(request.query), json.loads(await request.read())))
        problem = self.security(request.query)
        if problem:
            return web.json_response({"errcode": 310000, "errmsg": problem})
        status, body = self.replies[min(len(self.got), len(self.replies)) - 1]
        if status is None:
            await self.release.wait()
            status = 200
        return web.json_response(body, status=status)


def serve(robot: Robot) -> AbstractAsyncContextManager[str]:
    return serve_posts([PATH], robot.handle, robot.release, PATH)


OK = {"errcode": 0, "errmsg": "ok"}
ALERT: dict[str, Any] = {
    "status": "firing",
    "labels": {"alertname": "EngineDown", "severity": "critical", "host": "gpu-a"},
    "annotations": {"summary": "引擎 main 崩溃"},
    "startsAt": "2026-01-01T02:00:07Z",
    "endsAt": "0001-01-01T00:00:00Z",
}
PAYLOAD: dict[str, Any] = {"version": "4", "status": "firing", "alerts": [ALERT]}


async def send(robot: Robot, clock_at: float = NOW, **cfg: Any) -> Any:
    async with serve(robot) as url:
        config = DingTalkConfig.from_mapping({"access_token": TOKEN, "secret": SECRET,
                                              "api_url": url, **cfg})  # fmt: skip
        n = DingTalkNotifier(config, clock=FakeClock(clock_at))
        out = await asyncio.wait_for(n.notify(PAYLOAD), timeout=30)
        await n.aclose()
    return out


def test_documented_sign_vector() -> None:
    assert sign("SEC0123456789abcdef", 1767225600000) == (
        "B0RWzLp5DJ68eWPlqN2is7j/CJw7WP3nV1RkTFHU+F4="
    )


def test_signed_markdown_success_with_mentions() -> None:
    robot = Robot((200, OK))
    out = asyncio.run(send(robot, at_mobiles=["13800000000"], keyword="告警", language="zh"))
    assert out.kind is OutcomeKind.OK
    query, body = robot.got[0]
    assert query["timestamp"] == "1767225600000"
    assert body["msgtype"] == "markdown"
    assert body["markdown"]["title"] == "告警 [严重] EngineDown @ gpu-a"
    assert "引擎 main 崩溃" in body["markdown"]["text"]
    assert body["markdown"]["text"].endswith("@13800000000")
    assert body["at"]["atMobiles"] == ["13800000000"] and body["at"]["isAtAll"] is False


def test_security_failures_are_permanent_with_cause() -> None:
    out = asyncio.run(send(Robot((200, OK)), clock_at=NOW + 7200))  # host clock 2 h off
    assert out.kind is OutcomeKind.PERMANENT and "310000" in out.reason
    assert "invalid timestamp" in out.reason


def test_throttle_retries_after_long_pause_and_busy_retries() -> None:
    throttled = {"errcode": 130101, "errmsg": "send too fast, exceed 20 times per minute"}
    out = asyncio.run(send(Robot((200, throttled))))
    assert out.kind is OutcomeKind.RETRY and out.retry_after == 600.0
    out = asyncio.run(send(Robot((200, {"errcode": -1, "errmsg": "系统繁忙"}))))
    assert out.kind is OutcomeKind.RETRY and out.retry_after is None


def test_5xx_retries_and_timeout_may_have_been_delivered() -> None:
    out = asyncio.run(send(Robot((500, {"errcode": -1}))))
    assert out.kind is OutcomeKind.RETRY and out.status == 500
    out = asyncio.run(
        send(Robot((None, OK)), timeout=1.0)
    )  # 1 s: a loaded machine may take 0.3 s to connect
    assert out.kind is OutcomeKind.RETRY and out.maybe_delivered and "Timeout" in out.reason


def test_token_and_secret_never_leak(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    caplog.set_level(logging.WARNING, logger="httpx")  # as the daemon runs it (notify.md §4.2)
    (tmp_path / "secret").write_text("SECDTCANARY-wrong\n")

    async def scenario() -> list[Any]:
        async with serve(Robot((200, OK))) as url:
            config = DingTalkConfig(access_token=TOKEN, secret_file=tmp_path / "secret",
                                    api_url=url)  # fmt: skip
            n = DingTalkNotifier(config, clock=FakeClock(NOW))
            mismatch = await n.notify(PAYLOAD)  # the robot echoes the query back
            await n.aclose()
        dead = build("dingtalk", {"access_token": TOKEN, "secret": SECRET,
                                  "api_url": f"http://127.0.0.1:{free_port()}{PATH}"})  # fmt: skip
        refused = await dead.notify(PAYLOAD)
        await dead.aclose()
        return [mismatch, refused]

    mismatch, refused = asyncio.run(scenario())
    assert mismatch.kind is OutcomeKind.PERMANENT and "sign not match" in mismatch.reason
    assert refused.kind is OutcomeKind.RETRY
    for out in (mismatch, refused):
        assert "DTCANARY" not in out.reason and "DTCANARY" not in repr(out)
    ours = [r for r in caplog.records if r.name != "aiohttp.access"]
    assert all("DTCANARY" not in r.getMessage() for r in ours)


def test_config_validation_and_registry() -> None:
    assert "dingtalk" in REGISTRY
    with pytest.raises(ValueError, match="exactly one"):
        DingTalkConfig()
    with pytest.raises(ValueError, match="at most one"):
        DingTalkConfig(access_token="t" * 8, secret="s" * 8, secret_file=Path("/x"))
