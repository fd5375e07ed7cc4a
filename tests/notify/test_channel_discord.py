"""The Discord channel against a local emulator of an execute-webhook endpoint (aiohttp on
127.0.0.1) answering with the documented bodies: 200 + message (wait=true), 429 with fractional
retry_after, 400 code 50035, 404 unknown webhook, 5xx and a hang."""

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
from inferwatch.notify.channels.discord import DiscordConfig, DiscordNotifier
from inferwatch.notify.retry import OutcomeKind
from notify.emulator import serve_posts

TOKEN = "DCCANARY-wh-token-42"


class Webhook:
    """Answers each execute with the next scripted (status, body); ``None`` status hangs."""

    def __init__(self, *replies: tuple[int | None, Any]) -> None:
        self.replies = list(replies)
        self.got: list[tuple[dict[str, str], Any]] = []
        self.release = asyncio.Event()

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.got.append((dict(request.query), json.loads(await request.read())))
        if request.match_info["token"] != TOKEN:
            return web.json_response({"message": f"Unknown Webhook {request.path}", "code": 10015},
                                     status=404)  # fmt: skip
        status, body = self.replies[min(len(self.got), len(self.replies)) - 1]
        if status is None:
            await self.release.wait()
            status = 200
        return web.json_response(body, status=status)


def serve(hook: Webhook) -> AbstractAsyncContextManager[str]:
    return serve_posts(
        ["/api/webhooks/{id}/{token}"], hook.handle, hook.release, "/api/webhooks/1234"
    )


OK = {"id": "1", "type": 0, "content": "", "channel_id": "2"}
ALERT: dict[str, Any] = {
    "status": "firing",
    "labels": {"alertname": "EngineDown", "severity": "critical", "host": "gpu-a"},
    "annotations": {"summary": "Engine main crashed; log says @everyone panic"},
    "startsAt": "2026-01-01T02:00:07Z",
    "endsAt": "0001-01-01T00:00:00Z",
}
PAYLOAD: dict[str, Any] = {"version": "4", "status": "firing", "alerts": [ALERT]}


async def send(hook: Webhook, **cfg: Any) -> Any:
    async with serve(hook) as base:
        n = build("discord", {"webhook_url": f"{base}/{TOKEN}", **cfg})
        out = await asyncio.wait_for(n.notify(PAYLOAD), timeout=30)
        await n.aclose()
    return out


def test_embed_without_mentions_and_wait_true() -> None:
    hook = Webhook((200, OK))
    assert asyncio.run(send(hook, username="inferwatch")).kind is OutcomeKind.OK
    query, body = hook.got[0]
    assert query == {"wait": "true"} and body["allowed_mentions"] == {"parse": []}
    embed = body["embeds"][0]
    assert embed["title"] == "[CRITICAL] EngineDown @ gpu-a" and embed["color"] == 0xE01E5A
    assert "@everyone" in embed["description"] and body["username"] == "inferwatch"


def test_429_fractional_retry_after_and_permanent_400() -> None:
    limited = {"message": "You are being rate limited.", "retry_after": 1.5, "global": False}
    out = asyncio.run(send(Webhook((429, limited))))
    assert out.kind is OutcomeKind.RETRY and out.retry_after == 1.5
    invalid = {"code": 50035, "message": "Invalid Form Body", "errors": {}}
    out = asyncio.run(send(Webhook((400, invalid))))
    assert out.kind is OutcomeKind.PERMANENT and "50035 Invalid Form Body" in out.reason


def test_5xx_retries_and_timeout_may_have_been_delivered() -> None:
    out = asyncio.run(send(Webhook((502, {"message": "bad gateway"}))))
    assert out.kind is OutcomeKind.RETRY and out.status == 502
    out = asyncio.run(
        send(Webhook((None, OK)), timeout=1.0)
    )  # 1 s: a loaded machine may take 0.3 s to connect
    assert out.kind is OutcomeKind.RETRY and out.maybe_delivered and "Timeout" in out.reason


def test_webhook_token_never_leaks(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    caplog.set_level(logging.WARNING, logger="httpx")  # as the daemon runs it (notify.md §4.2)

    async def scenario() -> list[Any]:
        async with serve(Webhook((200, OK))) as base:
            (tmp_path / "url").write_text(f"{base}/DCCANARY-deleted\n")
            n = DiscordNotifier(DiscordConfig(webhook_url_file=tmp_path / "url"))
            gone = await n.notify(PAYLOAD)  # the emulator echoes its path back
            await n.aclose()
        url = f"http://127.0.0.1:{free_port()}/api/webhooks/1/{TOKEN}"
        dead = build("discord", {"webhook_url": url})
        refused = await dead.notify(PAYLOAD)
        await dead.aclose()
        return [gone, refused]

    gone, refused = asyncio.run(scenario())
    assert gone.kind is OutcomeKind.PERMANENT and gone.status == 404
    assert refused.kind is OutcomeKind.RETRY
    for out in (gone, refused):
        assert "DCCANARY" not in out.reason and "DCCANARY" not in repr(out)
    ours = [r for r in caplog.records if r.name != "aiohttp.access"]
    assert all("DCCANARY" not in r.getMessage() for r in ours)


def test_config_validation_and_registry() -> None:
    assert "discord" in REGISTRY
    with pytest.raises(ValueError, match="exactly one"):
        DiscordConfig()
