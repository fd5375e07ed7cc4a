"""The Telegram channel against a local emulator of the Bot API (aiohttp on 127.0.0.1) answering
with the documented bodies: ok, 429 + retry_after, 400 can't parse entities, 401, 5xx, a hang."""

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
from inferwatch.notify.channels.telegram import TelegramConfig, TelegramNotifier
from inferwatch.notify.retry import OutcomeKind
from notify.emulator import serve_posts

TOKEN = "123456:TGCANARY-AAbbCCdd"


class BotApi:
    """Answers each sendMessage with the next scripted (status, body); ``None`` status hangs."""

    def __init__(self, *replies: tuple[int | None, Any]) -> None:
        self.replies = list(replies)
        self.got: list[Any] = []
        self.release = asyncio.Event()

    async def handle(self, request: web.Request) -> web.StreamResponse:
        if request.match_info["token"] != TOKEN:
            return web.json_response(
                {"ok": False, "error_code": 401, "description": "Unauthorized"}, status=401
            )
        self.got.append(json.loads(await request.read()))
        status, body = self.replies[min(len(self.got), len(self.replies)) - 1]
        if status is None:
            await self.release.wait()
            status = 200
        return web.json_response(body, status=status)


def serve(api: BotApi) -> AbstractAsyncContextManager[str]:
    return serve_posts(["/bot{token}/sendMessage"], api.handle, api.release)


OK = {"ok": True, "result": {"message_id": 7, "chat": {"id": -100123}}}
ALERT: dict[str, Any] = {
    "status": "firing",
    "labels": {"alertname": "EngineDown", "severity": "critical", "host": "gpu-a"},
    "annotations": {"summary": "Engine <main> crashed & stopped"},
    "startsAt": "2026-01-01T02:00:07Z",
    "endsAt": "0001-01-01T00:00:00Z",
}
PAYLOAD: dict[str, Any] = {"version": "4", "status": "firing", "alerts": [ALERT]}


async def send(api: BotApi, payload: dict[str, Any] = PAYLOAD, **cfg: Any) -> Any:
    async with serve(api) as url:
        n = build("telegram", {"bot_token": TOKEN, "chat_id": -100123, "api_url": url, **cfg})
        out = await asyncio.wait_for(n.notify(payload), timeout=30)
        await n.aclose()
    return out


def test_success_html_escaped_and_critical_makes_a_sound() -> None:
    api = BotApi((200, OK))
    out = asyncio.run(send(api, message_thread_id=5))
    assert out.kind is OutcomeKind.OK
    body = api.got[0]
    assert body["chat_id"] == -100123 and body["parse_mode"] == "HTML"
    assert body["text"].startswith("<b>[CRITICAL] EngineDown @ gpu-a</b>")
    assert "Engine &lt;main&gt; crashed &amp; stopped" in body["text"]
    assert body["disable_notification"] is False and body["message_thread_id"] == 5


def test_resolved_is_silent() -> None:
    api = BotApi((200, OK))
    asyncio.run(send(api, {**PAYLOAD, "alerts": [{**ALERT, "status": "resolved"}]}))
    assert api.got[0]["disable_notification"] is True


def test_429_waits_retry_after_from_body() -> None:
    limited = {"ok": False, "error_code": 429, "description": "Too Many Requests: retry after 7",
               "parameters": {"retry_after": 7}}  # fmt: skip
    out = asyncio.run(send(BotApi((429, limited))))
    assert out.kind is OutcomeKind.RETRY and out.retry_after == 7.0 and out.status == 429


def test_cant_parse_entities_is_resent_once_as_plain_text() -> None:
    bad = {"ok": False, "error_code": 400,
           "description": "Bad Request: can't parse entities: unsupported start tag"}  # fmt: skip
    api = BotApi((400, bad), (200, OK))
    out = asyncio.run(send(api))
    assert out.kind is OutcomeKind.OK and len(api.got) == 2
    assert "parse_mode" not in api.got[1] and "<main>" in api.got[1]["text"]


def test_body_level_failure_migrated_group_and_ok_false() -> None:
    migrated = {"ok": False, "error_code": 400, "description": "Bad Request: group chat was "
                "upgraded to a supergroup chat", "parameters": {"migrate_to_chat_id": -1009}}  # fmt: skip
    out = asyncio.run(send(BotApi((400, migrated))))
    assert out.kind is OutcomeKind.PERMANENT and "-1009" in out.reason
    odd = asyncio.run(send(BotApi((200, {"ok": False}))))
    assert odd.kind is OutcomeKind.RETRY


def test_5xx_retries_and_timeout_may_have_been_delivered() -> None:
    out = asyncio.run(send(BotApi((502, {"ok": False, "description": "Bad Gateway"}))))
    assert out.kind is OutcomeKind.RETRY and out.status == 502
    out = asyncio.run(
        send(BotApi((None, OK)), timeout=1.0)
    )  # 1 s: a loaded machine may take 0.3 s to connect
    assert out.kind is OutcomeKind.RETRY and out.maybe_delivered and "Timeout" in out.reason


def test_bad_token_is_permanent_and_token_never_leaks(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    caplog.set_level(logging.WARNING, logger="httpx")  # as the daemon runs it (notify.md §4.2)
    token_file = tmp_path / "token"
    token_file.write_text("999:TGCANARY-wrong\n")

    async def scenario() -> list[Any]:
        outs = []
        async with serve(BotApi((200, OK))) as url:
            n = TelegramNotifier(TelegramConfig(chat_id=1, bot_token_file=token_file, api_url=url))
            outs.append(await n.notify(PAYLOAD))
            await n.aclose()
        dead = build("telegram", {"bot_token": TOKEN, "chat_id": 1,
                                  "api_url": f"http://127.0.0.1:{free_port()}"})  # fmt: skip
        outs.append(await dead.notify(PAYLOAD))
        await dead.aclose()
        return outs

    denied, refused = asyncio.run(scenario())
    assert denied.kind is OutcomeKind.PERMANENT and denied.status == 401
    assert refused.kind is OutcomeKind.RETRY
    for out in (denied, refused):
        assert "TGCANARY" not in out.reason and "TGCANARY" not in repr(out)
    ours = [r for r in caplog.records if r.name != "aiohttp.access"]  # the emulator's own log
    assert all("TGCANARY" not in r.getMessage() for r in ours)


def test_config_validation_and_registry() -> None:
    assert "telegram" in REGISTRY
    with pytest.raises(ValueError, match="chat_id"):
        build("telegram", {"bot_token": TOKEN})
    with pytest.raises(ValueError, match="exactly one"):
        TelegramConfig(chat_id=1)
