"""Prometheus's /-/healthy, /-/ready and /-/reload on the daemon's HTTP server."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
from prometheus_client import CollectorRegistry

from inferwatch.export.management import Management
from inferwatch.export.server import ExportServer


def test_health_readiness_and_reload_answer_like_prometheus() -> None:
    state: dict[str, Any] = {"ready": False, "problem": None, "reloads": 0}

    async def reload() -> str | None:
        state["reloads"] += 1
        problem: str | None = state["problem"]
        return problem

    async def no_events(**_kw: Any) -> list[dict[str, Any]]:
        return []

    async def main() -> None:
        life = Management(lambda: bool(state["ready"]), reload)
        server = ExportServer(CollectorRegistry(), dict, no_events, routes=life.routes())
        host, port = await server.start("127.0.0.1", 0)
        try:
            async with httpx.AsyncClient(
                base_url=f"http://{host}:{port}", trust_env=False, timeout=10
            ) as c:
                assert (await c.get("/-/healthy")).status_code == 200
                assert (await c.head("/-/healthy")).status_code == 200
                assert (await c.get("/-/ready")).status_code == 503
                state["ready"] = True
                assert (await c.get("/-/ready")).status_code == 200
                r = await c.get("/-/reload")
                assert r.status_code == 405
                assert "POST" in r.headers["Allow"]
                assert state["reloads"] == 0
                # curl -X POST: no body, no JSON content type, still a reload
                r = await c.post("/-/reload")
                assert (r.status_code, state["reloads"]) == (200, 1)
                state["problem"] = "c.yaml:2:1: metrics_ulr: unknown key"
                r = await c.put("/-/reload")
                assert r.status_code == 500
                assert "c.yaml:2:1: metrics_ulr: unknown key" in r.text
        finally:
            await server.stop()

    asyncio.run(main())
