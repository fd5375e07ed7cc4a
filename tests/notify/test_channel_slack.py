"""The Slack channel against a local emulator of an incoming webhook (aiohttp on 127.0.0.1)
answering with the documented plain-text bodies: ``ok``, ``invalid_payload``, 404
``no_service``, 429 + Retry-After, 5xx and a hang."""

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
from inferwatch.notify.channels.slack import SlackConfig, SlackNotifier
from inferwatch.notify.retry import OutcomeKind
from notify.emulator import serve_posts

TOKEN = "SLCANARYxyzTOKEN24ch"


class Hook:
    """Answers each post with the next scripted (status, text, headers); ``None`` hangs."""

    def __init__(self, *replies: tuple[int | None, str, dict[str, str]]) -> None:
        self.replies = list(replies)
        self.got: list[Any] = []
        self.release = asyncio.Event()

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.got.append(json.loads(await request.read()))
        if request.match_info["token"] != TOKEN:
            return web.Response(status=404, text=f"no_service {request.path}")
        status, text, headers = self.replies[min(len(self.got), len(self.replies)) - 1]
        if status is None:
            await self.release.wait()
            status = 200
        return web.Response(status=status, text=text, headers=headers)


def serve(hook: Hook) -> AbstractAsyncContextManager[str]:
    return serve_posts(
        ["/services/T000/B000/{token}"], hook.handle, hook.release, "/services/T000/B000"
    )


ALERT: dict[str, Any] = {
    "status": "firing",
    "labels": {"alertname": "EngineDown", "severity": "critical", "host": "gpu-a"},
    "annotations": {"summary": "Engine <!channel> crashed & stopped"},
    "startsAt": "2026-01-01T02:00:07Z",
    "endsAt": "0001-01-01T00:00:00Z",
}
PAYLOAD: dict[str, Any] = {"version": "4", "status": "firing", "alerts": [ALERT]}


async def send(hook: Hook, **cfg: Any) -> Any:
    async with serve(hook) as base:
        n = build("slack", {"api_url": f"{base}/{TOKEN}", **cfg})
        out = await asyncio.wait_for(n.notify(PAYLOAD), timeout=30)
        await n.aclose()
    return out


def test_success_escaped_mrkdwn() -> None:
    hook = Hook((200, "ok", {}))
    assert asyncio.run(send(hook, channel="#oncall")).kind is OutcomeKind.OK
    body = hook.got[0]
    assert body["text"].startswith("*[CRITICAL] EngineDown @ gpu-a*\n")
    assert "Engine &lt;!channel&gt; crashed &amp; stopped" in body["text"]
    assert body["channel"] == "#oncall"


def test_errors_rate_limit_5xx_and_timeout() -> None:
    out = asyncio.run(send(Hook((400, "invalid_payload", {}))))
    assert out.kind is OutcomeKind.PERMANENT and "invalid_payload" in out.reason
    out = asyncio.run(send(Hook((429, "rate_limited", {"Retry-After": "30"}))))
    assert out.kind is OutcomeKind.RETRY and out.retry_after == 30.0
    out = asyncio.run(send(Hook((500, "internal_error", {}))))
    assert out.kind is OutcomeKind.RETRY and out.status == 500
    out = asyncio.run(
        send(Hook((None, "ok", {})), timeout=1.0)
    )  # 1 s: a loaded machine may take 0.3 s to connect
    assert out.kind is OutcomeKind.RETRY and out.maybe_delivered and "Timeout" in out.reason


def test_hook_token_never_leaks(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    caplog.set_level(logging.WARNING, logger="httpx")  # as the daemon runs it (notify.md §4.2)

    async def scenario() -> list[Any]:
        async with serve(Hook((200, "ok", {}))) as base:
            (tmp_path / "url").write_text(f"{base}/SLCANARYrevoked\n")
            n = SlackNotifier(SlackConfig(api_url_file=tmp_path / "url"))
            gone = await n.notify(PAYLOAD)  # the emulator echoes its path back
            await n.aclose()
        url = f"http://127.0.0.1:{free_port()}/services/T/B/{TOKEN}"
        dead = build("slack", {"api_url": url})
        refused = await dead.notify(PAYLOAD)
        await dead.aclose()
        return [gone, refused]

    gone, refused = asyncio.run(scenario())
    assert gone.kind is OutcomeKind.PERMANENT and "no_service" in gone.reason
    assert refused.kind is OutcomeKind.RETRY
    for out in (gone, refused):
        assert "SLCANARY" not in out.reason and "SLCANARY" not in repr(out)
    ours = [r for r in caplog.records if r.name != "aiohttp.access"]
    assert all("SLCANARY" not in r.getMessage() for r in ours)


def test_config_validation_and_registry() -> None:
    assert "slack" in REGISTRY
    with pytest.raises(ValueError, match="exactly one"):
        SlackConfig()
