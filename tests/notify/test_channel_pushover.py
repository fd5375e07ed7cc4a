"""The Pushover channel against a local emulator of ``/1/messages.json`` (aiohttp on 127.0.0.1)
answering with the documented bodies: status 1, 4xx status 0 + errors, 429, 5xx and a hang."""

from __future__ import annotations

import asyncio
import logging
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from conftest import free_port
from inferwatch.notify.channels import REGISTRY, build
from inferwatch.notify.channels.pushover import PushoverConfig, PushoverNotifier
from inferwatch.notify.retry import OutcomeKind
from notify.emulator import serve_posts

TOKEN = "POCANARYapptoken0000000000000"
USER = "POCANARYuserkey11111111111111"


class Api:
    """Answers each form post with the next scripted (status, body); ``None`` status hangs."""

    def __init__(self, *replies: tuple[int | None, Any]) -> None:
        self.replies = list(replies)
        self.got: list[dict[str, str]] = []
        self.release = asyncio.Event()

    async def handle(self, request: web.Request) -> web.StreamResponse:
        form = {k: str(v) for k, v in (await request.post()).items()}
        self.got.append(form)
        if form.get("token") != TOKEN or form.get("user") != USER:
            bad = {"token": "invalid", "errors": [f"application token is invalid: {form}"],
                   "status": 0, "request": "r"}  # fmt: skip
            return web.json_response(bad, status=400)
        status, body = self.replies[min(len(self.got), len(self.replies)) - 1]
        if status is None:
            await self.release.wait()
            status = 200
        return web.json_response(body, status=status)


def serve(api: Api) -> AbstractAsyncContextManager[str]:
    return serve_posts(["/1/messages.json"], api.handle, api.release, "/1/messages.json")


OK = {"status": 1, "request": "647d2300-702c-4b38-8b2f-d56326ae460b"}
ALERT: dict[str, Any] = {
    "status": "firing",
    "labels": {"alertname": "EngineDown", "severity": "critical", "host": "gpu-a"},
    "annotations": {"summary": "Engine main crashed " + "x" * 2000},
    "startsAt": "2026-01-01T02:00:07Z",
    "endsAt": "0001-01-01T00:00:00Z",
}
PAYLOAD: dict[str, Any] = {"version": "4", "status": "firing", "alerts": [ALERT]}


async def send(api: Api, payload: dict[str, Any] = PAYLOAD, **cfg: Any) -> Any:
    async with serve(api) as url:
        n = build("pushover", {"token": TOKEN, "user_key": USER, "api_url": url, **cfg})
        out = await asyncio.wait_for(n.notify(payload), timeout=30)
        await n.aclose()
    return out


def test_critical_is_emergency_within_limits() -> None:
    api = Api((200, OK))
    assert asyncio.run(send(api, retry="2m")).kind is OutcomeKind.OK
    form = api.got[0]
    assert form["priority"] == "2" and form["retry"] == "120" and form["expire"] == "3600"
    assert form["title"] == "[CRITICAL] EngineDown @ gpu-a" and len(form["message"]) <= 1024


def test_warning_and_resolved_priorities() -> None:
    warn = {**ALERT, "labels": {**ALERT["labels"], "severity": "warning"}}
    api = Api((200, OK))
    asyncio.run(send(api, {**PAYLOAD, "alerts": [warn]}))
    asyncio.run(send(api, {**PAYLOAD, "alerts": [{**ALERT, "status": "resolved"}]}))
    assert [f["priority"] for f in api.got] == ["0", "-1"] and "retry" not in api.got[0]


def test_errors_quota_5xx_and_timeout() -> None:
    bad = {"message": "cannot be blank", "errors": ["message cannot be blank"], "status": 0}
    out = asyncio.run(send(Api((400, bad))))
    assert out.kind is OutcomeKind.PERMANENT and "message cannot be blank" in out.reason
    out = asyncio.run(send(Api((200, {"status": 0, "errors": ["odd"]}))))
    assert out.kind is OutcomeKind.PERMANENT
    out = asyncio.run(send(Api((429, {"status": 0, "errors": ["quota"]}))))
    assert out.kind is OutcomeKind.RETRY and out.status == 429
    out = asyncio.run(send(Api((500, {"status": 0}))))
    assert out.kind is OutcomeKind.RETRY and out.status == 500
    out = asyncio.run(
        send(Api((None, OK)), timeout=1.0)
    )  # 1 s: a loaded machine may take 0.3 s to connect
    assert out.kind is OutcomeKind.RETRY and out.maybe_delivered and "Timeout" in out.reason


def test_token_and_user_never_leak(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    caplog.set_level(logging.WARNING, logger="httpx")  # as the daemon runs it (notify.md §4.2)
    (tmp_path / "token").write_text("POCANARYwrongtoken\n")

    async def scenario() -> list[Any]:
        async with serve(Api((200, OK))) as url:
            config = PushoverConfig(token_file=tmp_path / "token", user_key=USER, api_url=url)
            n = PushoverNotifier(config)
            bad = await n.notify(PAYLOAD)  # the emulator echoes the form back
            await n.aclose()
        dead = build("pushover", {"token": TOKEN, "user_key": USER,
                                  "api_url": f"http://127.0.0.1:{free_port()}/1/m.json"})  # fmt: skip
        refused = await dead.notify(PAYLOAD)
        await dead.aclose()
        return [bad, refused]

    bad, refused = asyncio.run(scenario())
    assert bad.kind is OutcomeKind.PERMANENT and bad.status == 400
    assert refused.kind is OutcomeKind.RETRY
    for out in (bad, refused):
        assert "POCANARY" not in out.reason and "POCANARY" not in repr(out)
    ours = [r for r in caplog.records if r.name != "aiohttp.access"]
    assert all("POCANARY" not in r.getMessage() for r in ours)


def test_config_validation_and_registry() -> None:
    assert "pushover" in REGISTRY
    with pytest.raises(ValueError, match="token"):
        PushoverConfig(user_key=USER)
    with pytest.raises(ValueError, match="retry"):
        PushoverConfig(token=TOKEN, user_key=USER, retry=10)
