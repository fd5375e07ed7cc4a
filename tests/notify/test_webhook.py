"""The webhook channel against a real HTTP sink on 127.0.0.1 (aiohttp), driven through the
outbox and the retry policy the way the delivery stage will drive it."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from conftest import free_port
from inferwatch.clock import FakeClock
from inferwatch.notify.channels import REGISTRY, build
from inferwatch.notify.channels.webhook import WebhookConfig, WebhookNotifier, parse_duration
from inferwatch.notify.delivery import deliver_due
from inferwatch.notify.outbox import Outbox, idempotency_key
from inferwatch.notify.retry import OutcomeKind, RetryPolicy
from notify.emulator import serve_posts

Reply = Callable[[web.Request], Awaitable[web.StreamResponse]]


class Sink:
    """Answers each request with the next scripted reply (the last one repeats)."""

    def __init__(self, replies: list[Reply]) -> None:
        self.replies = replies
        self.got: list[tuple[dict[str, str], Any]] = []
        self.release = asyncio.Event()

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.got.append((dict(request.headers), json.loads(await request.read())))
        reply = self.replies[min(len(self.got), len(self.replies)) - 1]
        return await reply(request)


def status(code: int, text: str = "", **headers: str) -> Reply:
    async def reply(_: web.Request) -> web.StreamResponse:
        return web.Response(status=code, text=text, headers=headers)

    return reply


def serve(sink: Sink) -> AbstractAsyncContextManager[str]:
    return serve_posts(["/{tail:.*}"], sink.handle, sink.release)


PAYLOAD: dict[str, Any] = {
    "version": "4",
    "groupKey": '{}:{engine="main"}',
    "truncatedAlerts": 0,
    "status": "firing",
    "receiver": "phone",
    "groupLabels": {"engine": "main"},
    "commonLabels": {"engine": "main"},
    "commonAnnotations": {},
    "externalURL": "http://127.0.0.1:9108",
    "alerts": [
        {"status": "firing", "labels": {"engine": "main", "n": "1"}, "fingerprint": "a"},
        {"status": "resolved", "labels": {"engine": "main", "n": "2"}, "fingerprint": "b"},
        {"status": "firing", "labels": {"engine": "main", "n": "3"}, "fingerprint": "c"},
    ],
}


def notifier(url: str, **kw: Any) -> WebhookNotifier:
    return WebhookNotifier(WebhookConfig(url=url, **kw))


def test_success_sends_payload_unchanged_with_idempotency_key() -> None:
    async def scenario() -> None:
        sink = Sink([status(200)])
        async with serve(sink) as base:
            n = notifier(f"{base}/hook")
            out = await n.notify(PAYLOAD, idempotency_key="key-1")
            await n.aclose()
        assert out.kind is OutcomeKind.OK and out.status == 200
        headers, body = sink.got[0]
        assert body == PAYLOAD
        assert headers["Idempotency-Key"] == "key-1"
        assert headers["Content-Type"] == "application/json"
        assert headers["User-Agent"].startswith("inferwatch/")

    asyncio.run(scenario())


def test_5xx_then_success_through_outbox_and_policy(tmp_path: Path) -> None:
    async def scenario() -> None:
        clock = FakeClock()
        box = Outbox(tmp_path / "outbox.db")
        policy = RetryPolicy(deadline=3600, rand=lambda: 1.0)
        key = idempotency_key("phone", "webhook", PAYLOAD["groupKey"], [("a", "firing")], 1)
        box.enqueue(key=key, receiver="phone", integration="webhook",
                    group_key=PAYLOAD["groupKey"], payload=PAYLOAD, now=clock.time())  # fmt: skip
        sink = Sink([status(503, "busy"), status(502), status(200)])
        async with serve(sink) as base:
            n = notifier(f"{base}/hook")
            for _ in range(30):
                await deliver_due(box, {("phone", "webhook"): n}, policy, clock.time())
                if box.pending_count() == 0:
                    break
                clock.advance(1)
            await n.aclose()
        assert box.pending_count() == 0 and len(sink.got) == 3
        assert {h["Idempotency-Key"] for h, _ in sink.got} == {key}
        assert box.get(key).attempts == 3  # type: ignore[union-attr]
        box.close()

    asyncio.run(scenario())


def test_429_with_retry_after() -> None:
    async def scenario() -> None:
        sink = Sink([status(429, "slow down", **{"Retry-After": "7"})])
        async with serve(sink) as base:
            n = notifier(f"{base}/hook")
            out = await n.notify(PAYLOAD)
            await n.aclose()
        assert out.kind is OutcomeKind.RETRY and out.retry_after == 7.0 and out.status == 429
        assert "slow down" in out.reason

    asyncio.run(scenario())


def test_timeout_is_a_retry_that_may_have_been_delivered() -> None:
    async def scenario() -> None:
        sink = Sink([])

        async def hang(_: web.Request) -> web.StreamResponse:
            await sink.release.wait()
            return web.Response()

        sink.replies = [hang]
        async with serve(sink) as base:
            n = notifier(f"{base}/hook", timeout=0.3)
            out = await asyncio.wait_for(n.notify(PAYLOAD), timeout=30)
            await n.aclose()
        assert out.kind is OutcomeKind.RETRY and out.maybe_delivered
        assert "Timeout" in out.reason

    asyncio.run(scenario())


def test_4xx_is_permanent() -> None:
    async def scenario() -> None:
        sink = Sink([status(400, "bad payload")])
        async with serve(sink) as base:
            n = notifier(f"{base}/hook")
            out = await n.notify(PAYLOAD)
            await n.aclose()
        assert out.kind is OutcomeKind.PERMANENT and out.status == 400
        assert RetryPolicy().next_attempt_at(out, 1, 0.0, 0.0) is None

    asyncio.run(scenario())


def test_secret_in_url_never_appears_in_errors() -> None:
    async def scenario() -> None:
        # The sink echoes the URL back; the connection-refused case has no sink at all.
        async def echo(request: web.Request) -> web.StreamResponse:
            return web.Response(status=401, text=f"bad token in {request.url}")

        sink = Sink([echo])
        async with serve(sink) as base:
            n = notifier(f"{base}/hook/PATHCANARY7?token=QUERYCANARY7")
            denied = await n.notify(PAYLOAD)
            await n.aclose()
        refused_n = notifier(f"http://127.0.0.1:{free_port()}/x/PATHCANARY8?token=QUERYCANARY8")
        refused = await refused_n.notify(PAYLOAD)
        await refused_n.aclose()
        assert denied.kind is OutcomeKind.PERMANENT and "bad token" in denied.reason
        assert refused.kind is OutcomeKind.RETRY and not refused.maybe_delivered
        for out in (denied, refused):
            for canary in ("PATHCANARY", "QUERYCANARY"):
                assert canary not in out.reason and canary not in repr(out)

    asyncio.run(scenario())


def test_send_resolved_max_alerts_url_file_and_no_env_proxy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A desktop proxy in the environment must not reroute a loopback receiver.
    monkeypatch.setenv("ALL_PROXY", "http://127.0.0.1:1")
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:1")

    async def scenario() -> None:
        sink = Sink([status(200)])
        async with serve(sink) as base:
            url_file = tmp_path / "url"
            url_file.write_text(f"{base}/hook\n")
            n = build(
                "webhook",
                {"url_file": str(url_file), "send_resolved": False, "max_alerts": 1,
                 "http_config": {"timeout": "5s"}},
            )  # fmt: skip
            out = await n.notify(PAYLOAD)
            resolved_only = {**PAYLOAD, "alerts": [PAYLOAD["alerts"][1]], "status": "resolved"}
            skipped = await n.notify(resolved_only)
            await n.aclose()
        assert out.kind is OutcomeKind.OK and skipped.kind is OutcomeKind.OK
        assert len(sink.got) == 1  # the resolved-only group sent nothing
        body = sink.got[0][1]
        assert [a["labels"]["n"] for a in body["alerts"]] == ["1"]
        assert body["truncatedAlerts"] == 1  # "3" cut; resolved "2" dropped, not counted

    asyncio.run(scenario())


def test_config_validation_and_registry() -> None:
    assert {"webhook", "alertmanager"} <= set(REGISTRY)
    with pytest.raises(ValueError, match="exactly one"):
        WebhookConfig()
    with pytest.raises(ValueError, match="unknown notifier"):
        build("carrier-pigeon", {})
    assert parse_duration("500ms", 1) == 0.5 and parse_duration("1m", 1) == 60.0
    assert parse_duration(None, 3.0) == 3.0
    with pytest.raises(ValueError):
        parse_duration("soon", 1)
