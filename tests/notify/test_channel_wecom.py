"""The WeCom robot channel against a local emulator of the robot API (aiohttp on 127.0.0.1)
answering with the documented bodies: errcode 0, 45009, 93000, -1, plus 5xx and a hang."""

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
from inferwatch.notify.channels.wecom import WeComConfig, WeComNotifier
from inferwatch.notify.retry import OutcomeKind
from notify.emulator import serve_posts

KEY = "WECOMCANARY-3f9a1c77"
PATH = "/cgi-bin/webhook/send"


class Robot:
    """Answers each POST with the next scripted (status, body) pair; ``None`` status hangs."""

    def __init__(self, *replies: tuple[int | None, Any]) -> None:
        self.replies = list(replies)
        self.got: list[tuple[dict[str, str], Any]] = []
        self.release = asyncio.Event()

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.got.append((dict(request.query), json.loads(await request.read())))
        status, body = self.replies[min(len(self.got), len(self.replies)) - 1]
        if status is None:
            await self.release.wait()
            status = 200
        if request.query.get("key") != KEY:  # what the real robot says for a wrong key
            body = {"errcode": 93000, "errmsg": f"invalid webhook url, key={request.query}"}
        return web.json_response(body, status=status)


def serve(robot: Robot) -> AbstractAsyncContextManager[str]:
    return serve_posts([PATH], robot.handle, robot.release, PATH)


OK = {"errcode": 0, "errmsg": "ok"}
ALERT: dict[str, Any] = {
    "status": "firing",
    "labels": {"alertname": "EngineDown", "severity": "critical", "host": "gpu-a", "engine": "main"},
    "annotations": {"summary": "Engine main crashed", "diagnosis": "illegal memory access",
                    "action": "restart the engine"},
    "startsAt": "2026-01-01T02:00:07Z",
    "endsAt": "0001-01-01T00:00:00Z",
}  # fmt: skip
PAYLOAD: dict[str, Any] = {"version": "4", "status": "firing", "alerts": [ALERT]}


async def send(robot: Robot, payload: dict[str, Any] = PAYLOAD, **cfg: Any) -> Any:
    async with serve(robot) as url:
        n = build("wecom", {"key": KEY, "api_url": url, **cfg})
        out = await asyncio.wait_for(n.notify(payload), timeout=30)
        await n.aclose()
    return out


def test_markdown_success_with_colour_and_mention() -> None:
    robot = Robot((200, OK))
    out = asyncio.run(send(robot, mentioned_list=["owner"]))
    assert out.kind is OutcomeKind.OK
    query, body = robot.got[0]
    assert query == {"key": KEY}
    assert body["msgtype"] == "markdown"
    content = body["markdown"]["content"]
    assert content.startswith('## <font color="warning">[CRITICAL] EngineDown @ gpu-a</font>')
    assert "Engine main crashed" in content and "<@owner>" in content


def test_text_and_markdown_v2_selectable_and_chinese() -> None:
    robot = Robot((200, OK))
    asyncio.run(send(robot, msgtype="text", mentioned_list=["@all"], language="zh"))
    body = robot.got[0][1]
    assert body["text"]["mentioned_list"] == ["@all"]
    assert body["text"]["content"].startswith("[严重] EngineDown")
    robot = Robot((200, OK))
    asyncio.run(send(robot, msgtype="markdown_v2", mentioned_list=["owner"]))
    body = robot.got[0][1]
    assert body["msgtype"] == "markdown_v2" and "<@owner>" not in body["markdown_v2"]["content"]


def test_long_message_stays_under_4096_bytes() -> None:
    alerts = [
        {
            **ALERT,
            "annotations": {"summary": "显存错误" * 300},
            "labels": {**ALERT["labels"], "n": str(i)},
        }
        for i in range(5)
    ]
    robot = Robot((200, OK))
    asyncio.run(send(robot, {**PAYLOAD, "alerts": alerts}))
    content = robot.got[0][1]["markdown"]["content"]
    assert len(content.encode("utf-8")) <= 4096
    assert "+4 more" in content


def test_rate_limit_45009_retries_after_the_minute_window() -> None:
    out = asyncio.run(send(Robot((200, {"errcode": 45009, "errmsg": "api freq out of limit"}))))
    assert out.kind is OutcomeKind.RETRY and out.retry_after == 60.0
    assert "45009" in out.reason


def test_busy_retries_and_other_errcodes_are_permanent() -> None:
    busy = asyncio.run(send(Robot((200, {"errcode": -1, "errmsg": "system busy"}))))
    assert busy.kind is OutcomeKind.RETRY and busy.retry_after is None
    bad = asyncio.run(send(Robot((200, {"errcode": 40008, "errmsg": "invalid message type"}))))
    assert bad.kind is OutcomeKind.PERMANENT and "40008" in bad.reason


def test_5xx_retries_and_timeout_may_have_been_delivered() -> None:
    out = asyncio.run(send(Robot((502, {"error": "bad gateway"}))))
    assert out.kind is OutcomeKind.RETRY and out.status == 502
    out = asyncio.run(
        send(Robot((None, OK)), timeout=1.0)
    )  # 1 s: a loaded machine may take 0.3 s to connect
    assert out.kind is OutcomeKind.RETRY and out.maybe_delivered and "Timeout" in out.reason


def test_wrong_key_is_permanent_and_key_never_leaks(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    # httpx logs every full URL at INFO; notify.md §4.2 has the daemon hold it at WARNING.
    caplog.set_level(logging.WARNING, logger="httpx")
    key_file = tmp_path / "key"
    key_file.write_text("WECOMCANARY-wrong-key\n")

    async def scenario() -> list[Any]:
        outs = []
        async with serve(Robot((200, OK))) as url:
            n = WeComNotifier(WeComConfig(key_file=key_file, api_url=url))
            outs.append(await n.notify(PAYLOAD))
            await n.aclose()
        dead = build("wecom", {"key": KEY, "api_url": f"http://127.0.0.1:{free_port()}{PATH}"})
        outs.append(await dead.notify(PAYLOAD))
        await dead.aclose()
        async with serve(Robot((500, {"echo": KEY}))) as url:
            n = build("wecom", {"key": KEY, "api_url": url})
            outs.append(await n.notify(PAYLOAD))
            await n.aclose()
        return outs

    wrong, refused, echoed = asyncio.run(scenario())
    assert wrong.kind is OutcomeKind.PERMANENT and "93000" in wrong.reason
    assert refused.kind is OutcomeKind.RETRY and echoed.kind is OutcomeKind.RETRY
    for out in (wrong, refused, echoed):
        assert "WECOMCANARY" not in out.reason and "WECOMCANARY" not in repr(out)
    ours = [r for r in caplog.records if r.name != "aiohttp.access"]  # the emulator's own log
    assert all("WECOMCANARY" not in r.getMessage() for r in ours)


def test_resolved_muted_and_config_validation() -> None:
    resolved = {**PAYLOAD, "alerts": [{**ALERT, "status": "resolved"}]}
    robot = Robot((200, OK))
    out = asyncio.run(send(robot, resolved, send_resolved=False))
    assert out.kind is OutcomeKind.OK and robot.got == []
    assert "wecom" in REGISTRY
    with pytest.raises(ValueError, match="exactly one"):
        WeComConfig()
    with pytest.raises(ValueError, match="msgtype"):
        WeComConfig(key="k" * 8, msgtype="news")  # type: ignore[arg-type]
