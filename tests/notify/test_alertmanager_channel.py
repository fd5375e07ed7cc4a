"""Pushing into Alertmanager: against a loopback sink (body, resend, resolve, 400), and against
the real ``prometheus-alertmanager`` binary when it is installed."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest
from aiohttp import web

from conftest import free_port, require_tool, wait_until
from inferwatch.clock import FakeClock
from inferwatch.notify.channels.alertmanager import AlertmanagerConfig, AlertmanagerNotifier
from inferwatch.notify.payload import ZERO_TIME, rfc3339
from inferwatch.notify.retry import OutcomeKind


def v4(status: str, n: str, ends: str = ZERO_TIME) -> dict[str, Any]:
    return {
        "status": status,
        "labels": {"alertname": "XidFatal", "gpu": n},
        "annotations": {"summary": f"GPU {n} fell off the bus"},
        "startsAt": "2026-09-01T02:00:07Z",
        "endsAt": ends,
        "generatorURL": "http://gpu-a:9108/alerts",
        "fingerprint": f"fp{n}",
    }


def test_push_resend_resolve_and_reject() -> None:
    async def scenario() -> None:
        got: list[Any] = []
        reply = {"code": 200}

        async def handle(request: web.Request) -> web.Response:
            got.append(json.loads(await request.read()))
            return web.Response(status=reply["code"], text="bad alert")

        app = web.Application()
        app.router.add_post("/api/v2/alerts", handle)
        runner = web.AppRunner(app)
        await runner.setup()
        port = free_port()
        await web.TCPSite(runner, "127.0.0.1", port).start()
        clock = FakeClock(1_788_228_007.0)
        am = AlertmanagerNotifier(
            AlertmanagerConfig(url=f"http://127.0.0.1:{port}/", resend_interval=60), clock
        )
        try:
            out = await am.notify({"alerts": [v4("firing", "1"), v4("firing", "2")]})
            assert out.kind is OutcomeKind.OK
            assert got[0][0]["endsAt"] == rfc3339(clock.time() + 240)
            assert "fingerprint" not in got[0][0] and "status" not in got[0][0]

            clock.advance(60)
            done = rfc3339(clock.time())
            await am.notify({"alerts": [v4("resolved", "2", ends=done)]})
            assert got[1] == [{**got[0][1], "endsAt": done}]

            clock.advance(60)  # periodic re-send: the firing one refreshed, the resolved one kept
            assert (await am.resend()).kind is OutcomeKind.OK
            by_gpu = {a["labels"]["gpu"]: a["endsAt"] for a in got[2]}
            assert by_gpu == {"1": rfc3339(clock.time() + 240), "2": done}

            clock.advance(901)  # past the resolved retention: only the firing alert remains
            await am.resend()
            assert [a["labels"]["gpu"] for a in got[3]] == ["1"]

            reply["code"] = 400
            bad = await am.resend()
            assert bad.kind is OutcomeKind.PERMANENT and "bad alert" in bad.reason
        finally:
            await am.aclose()
            await runner.cleanup()
        empty = AlertmanagerNotifier(AlertmanagerConfig(url="http://127.0.0.1:1"), clock)
        assert (await empty.resend()).kind is OutcomeKind.OK  # nothing tracked, nothing sent

    asyncio.run(scenario())


def test_config_rejects_non_http_url() -> None:
    with pytest.raises(ValueError, match="http"):
        AlertmanagerConfig(url="ftp://x")
    cfg = AlertmanagerConfig.from_mapping({"url": "http://h:9093", "resend_interval": "30s"})
    assert cfg.endpoint == "http://h:9093/api/v2/alerts" and cfg.resend_interval == 30.0


@pytest.mark.integration
def test_real_alertmanager_lists_pushed_alert(tmp_path: Path) -> None:
    binary = require_tool("prometheus-alertmanager")
    port = free_port()
    config = tmp_path / "am.yml"
    config.write_text("route:\n  receiver: none\nreceivers:\n  - name: none\n")
    log = tmp_path / "am.log"
    log_handle = log.open("wb")
    proc = subprocess.Popen(
        [binary, f"--config.file={config}", f"--storage.path={tmp_path / 'data'}",
         f"--web.listen-address=127.0.0.1:{port}", "--cluster.listen-address=",
         "--log.level=warn"],
        stdout=subprocess.DEVNULL, stderr=log_handle,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:

        def ready() -> bool:
            try:
                return httpx.get(f"{base}/-/ready", timeout=2, trust_env=False).status_code == 200
            except httpx.HTTPError:
                assert proc.poll() is None, f"alertmanager exited: {log.read_text()[-2000:]}"
                return False

        wait_until(ready, timeout=60, what="alertmanager ready")
        am = AlertmanagerNotifier(AlertmanagerConfig(url=base))

        async def push() -> OutcomeKind:
            try:
                return (await am.notify({"alerts": [v4("firing", "1")]})).kind
            finally:
                await am.aclose()

        assert asyncio.run(push()) is OutcomeKind.OK

        def listed() -> list[Any]:
            alerts: list[Any] = httpx.get(f"{base}/api/v2/alerts", trust_env=False).json()
            return [a for a in alerts if a["labels"].get("alertname") == "XidFatal"]

        (alert,) = wait_until(listed, timeout=60, what="pushed alert listed")
        assert alert["labels"] == {"alertname": "XidFatal", "gpu": "1"}
        assert alert["status"]["state"] == "active"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)
        log_handle.close()
