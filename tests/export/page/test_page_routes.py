from __future__ import annotations

import asyncio
from typing import Any

import httpx
from prometheus_client import CollectorRegistry

from inferwatch.clock import FakeClock
from inferwatch.event import Kind
from inferwatch.export.page.routes import PageSource
from inferwatch.export.server import ExportServer
from inferwatch.labels import make_labels
from inferwatch.store.tsdb import SeriesStore


async def _events(**kwargs: Any) -> list[dict[str, Any]]:
    assert kwargs == {"limit": 30}
    return [{"at": 990.0, "type": "engine_crash", "source": "e.log", "labels": {}, "details": {}}]


def _broken_silences() -> dict[str, Any]:
    raise OSError("silences.json: permission denied")


def test_page_and_its_refresh_part_over_http() -> None:
    clock = FakeClock(1000.0)
    store = SeriesStore(clock)
    store.describe("inferwatch_engine_decode_tokens_per_second", Kind.GAUGE, "d")
    store.set("inferwatch_engine_decode_tokens_per_second", make_labels({"engine": "e1"}), 97.0)
    status = {
        "started_at": 900.0,
        "sources": {"engine:e1": {"state": "up", "reason": ""}},
        "notify": {"outbox_pending": 0, "last_attempts": {}},
    }
    alerts = {
        "alerts": [
            {
                "labels": {"alertname": "EngineCrashed", "severity": "critical"},
                "annotations": {"summary": "crashed", "summary_zh": "引擎崩溃"},
                "state": "firing",
                "activeAt": 995.0,
                "firedAt": 995.0,
            }
        ]
    }
    source = PageSource(
        store=store,
        now=clock.time,
        status=lambda: status,
        alerts=lambda: alerts,
        silences=_broken_silences,  # the page still shows the rest
        events=_events,
        language=lambda: "zh",
        links=lambda: [("Grafana", "http://grafana.example/d/x")],
    )

    async def go() -> tuple[httpx.Response, httpx.Response]:
        server = ExportServer(CollectorRegistry(), dict, _events)
        server.app.add_routes(source.routes())
        host, port = await server.start("127.0.0.1", 0)
        try:
            async with httpx.AsyncClient(base_url=f"http://{host}:{port}", trust_env=False) as c:
                return await c.get("/"), await c.get("/", params={"part": "main"})
        finally:
            await server.stop()

    full, part = asyncio.run(go())
    assert full.status_code == 200 and full.headers["content-type"].startswith("text/html")
    assert full.text.startswith("<!doctype html>") and "<script>" in full.text
    assert 'href="http://grafana.example/d/x"' in full.text
    assert "引擎崩溃" in full.text and "engine:e1" in full.text and "97.0" in full.text
    assert part.status_code == 200
    assert not part.text.startswith("<!doctype") and '<section id="alerts">' in part.text
    assert "engine_crash" in part.text
