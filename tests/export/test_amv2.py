"""The Alertmanager v2 subset: amtool's shapes (every required field), filters, muting, and
silences added, read, replaced and expired through the real HTTP server."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import pytest
from prometheus_client import CollectorRegistry

from inferwatch.alerts.model import Alert, AlertState, RuleKey
from inferwatch.clock import FakeClock
from inferwatch.config.alertmanager import InhibitRule, Route
from inferwatch.export.amv2 import AlertmanagerV2
from inferwatch.export.amv2_shapes import AlertFilter, FilterError, alertmanager_status
from inferwatch.export.server import ExportServer
from inferwatch.labels import make_labels
from inferwatch.notify.inhibit import Inhibitor
from inferwatch.notify.route import build_tree
from inferwatch.notify.silence import Silencer, Silences
from inferwatch.notify.silence_api import SilenceAPI

NOW = 1_790_000_000.0
KEY = RuleKey("r.yaml", "g", "A", "x > 0", ())
SILENCE_KEYS = {
    "id",
    "status",
    "updatedAt",
    "matchers",
    "startsAt",
    "endsAt",
    "createdBy",
    "comment",
}
ALERT_KEYS = {
    "labels", "annotations", "receivers", "fingerprint", "startsAt", "updatedAt", "endsAt", "status"
}  # fmt: skip


def alert(state: AlertState = AlertState.FIRING, **labels: str) -> Alert:
    return Alert(KEY, make_labels(labels), (("summary", "s"),), state, 1.0, NOW - 60,
                 fired_at=NOW - 30, last_eval=NOW - 1)  # fmt: skip


def body(**over: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "matchers": [{"name": "alertname", "value": "Xid", "isRegex": False, "isEqual": True}],
        "startsAt": "2026-01-01T00:00:00Z",
        "endsAt": "2099-01-01T00:00:00Z",
        "createdBy": "ops",
        "comment": "swap",
    }
    return {**doc, **over}


Check = Callable[[httpx.AsyncClient, Silences], Awaitable[None]]


def serve(tmp_path: Path, alerts: list[Alert], check: Check) -> None:
    silences = Silences()
    clock = FakeClock(NOW)
    api = SilenceAPI(lambda: silences, tmp_path / "silences.json", clock)
    route = Route(
        receiver="phone", routes=[Route(receiver="pager", matchers=["severity=critical"])]
    )
    inhibitor = Inhibitor.from_config(
        [InhibitRule(source_matchers=["alertname=Lost"], target_matchers=["alertname=Xid"])]
    )
    for a in alerts:
        inhibitor.observe(a)
    notify: Any = SimpleNamespace(
        tree=build_tree(route), inhibitor=inhibitor, silencer=Silencer(silences)
    )
    am = AlertmanagerV2(api, lambda: alerts, lambda: notify, lambda: "x: 1\n", clock, NOW - 3600)

    async def no_events(**_kw: Any) -> list[dict[str, Any]]:
        return []

    async def main() -> None:
        server = ExportServer(
            CollectorRegistry(), dict, no_events, silences=api, routes=am.routes()
        )
        host, port = await server.start("127.0.0.1", 0)
        try:
            async with httpx.AsyncClient(
                base_url=f"http://{host}:{port}", trust_env=False, timeout=10
            ) as client:
                await check(client, silences)
        finally:
            await server.stop()

    asyncio.run(main())


def test_silences_are_added_read_filtered_and_expired_in_alertmanager_shape(
    tmp_path: Path,
) -> None:
    async def check(client: httpx.AsyncClient, silences: Silences) -> None:
        r = await client.post("/api/v2/silences", json=body())
        assert r.status_code == 200, r.text
        sid = r.json()["silenceID"]
        listed = (await client.get("/api/v2/silences")).json()
        assert [s["id"] for s in listed] == [sid]
        one = listed[0]
        assert set(one) == SILENCE_KEYS
        assert one["status"] == {"state": "active"}
        assert one["startsAt"] == "2026-09-21T14:13:20Z"  # a past start means now
        assert one["matchers"][0] == {
            "name": "alertname", "value": "Xid", "isRegex": False, "isEqual": True
        }  # fmt: skip
        assert (await client.get(f"/api/v2/silence/{sid}")).json() == one
        hit = await client.get("/api/v2/silences", params={"filter": 'alertname="Xid"'})
        miss = await client.get("/api/v2/silences", params={"filter": 'alertname="Other"'})
        assert len(hit.json()) == 1
        assert miss.json() == []
        # amtool sends DELETE without a body or a JSON content type
        r = await client.delete(f"/api/v2/silence/{sid}")
        assert r.status_code == 200, r.text
        assert (await client.get(f"/api/v2/silence/{sid}")).json()["status"]["state"] == "expired"
        assert (await client.delete("/api/v2/silence/nope")).status_code == 404
        assert (await client.get("/api/v2/silence/nope")).status_code == 404

    serve(tmp_path, [], check)


def test_posting_with_an_id_replaces_that_silence(tmp_path: Path) -> None:
    async def check(client: httpx.AsyncClient, silences: Silences) -> None:
        first = (await client.post("/api/v2/silences", json=body())).json()["silenceID"]
        r = await client.post("/api/v2/silences", json=body(id=first, comment="longer"))
        second = r.json()["silenceID"]
        assert second != first
        states = {s.id: s.state(NOW).value for s in silences.all()}
        assert states == {first: "expired", second: "active"}
        r = await client.post("/api/v2/silences", json=body(id="unknown"))
        assert r.status_code == 404
        assert len(silences.all()) == 2  # nothing added for an unknown id

    serve(tmp_path, [], check)


def test_a_bad_silence_is_a_400_with_the_reason_as_a_json_string(tmp_path: Path) -> None:
    async def check(client: httpx.AsyncClient, _silences: Silences) -> None:
        r = await client.post("/api/v2/silences", json=body(comment=""))
        assert r.status_code == 400
        assert r.json() == "comment is required"
        r = await client.get("/api/v2/silences", params={"filter": "alertname=~("})
        assert r.status_code == 400

    serve(tmp_path, [], check)


def test_alerts_carry_receivers_and_what_mutes_them(tmp_path: Path) -> None:
    lost = alert(alertname="Lost", severity="critical")
    xid = alert(alertname="Xid", severity="warning")
    pending = alert(AlertState.PENDING, alertname="Soon")

    async def check(client: httpx.AsyncClient, _silences: Silences) -> None:
        sid = (await client.post("/api/v2/silences", json=body())).json()["silenceID"]
        docs = {a["labels"]["alertname"]: a for a in (await client.get("/api/v2/alerts")).json()}
        assert set(docs) == {"Lost", "Xid"}  # pending alerts are never Alertmanager's
        assert all(set(d) == ALERT_KEYS for d in docs.values())
        assert docs["Lost"]["receivers"] == [{"name": "pager"}]
        assert docs["Lost"]["status"] == {"state": "active", "silencedBy": [], "inhibitedBy": []}
        assert docs["Xid"]["receivers"] == [{"name": "phone"}]
        assert docs["Xid"]["status"] == {
            "state": "suppressed", "silencedBy": [sid], "inhibitedBy": [lost.fingerprint]
        }  # fmt: skip
        assert docs["Xid"]["startsAt"] == "2026-09-21T14:12:50Z"
        assert docs["Xid"]["endsAt"] == "2026-09-21T14:17:19Z"

        async def names(**params: str) -> list[str]:
            got = (await client.get("/api/v2/alerts", params=params)).json()
            return sorted(a["labels"]["alertname"] for a in got)

        # amtool's `alert query`: active, not silenced, not inhibited
        assert await names(silenced="false", inhibited="false") == ["Lost"]
        assert await names(active="false") == ["Xid"]
        assert await names(filter='severity="warning"') == ["Xid"]
        assert await names(receiver="pag.*") == ["Lost"]
        r = await client.get("/api/v2/alerts", params={"active": "maybe"})
        assert r.status_code == 400

    serve(tmp_path, [lost, xid, pending], check)


def test_status_has_every_field_amtool_requires() -> None:
    doc = alertmanager_status(NOW, "route: {}\n")
    assert set(doc) == {"cluster", "versionInfo", "config", "uptime"}
    assert doc["cluster"]["status"] == "disabled"
    assert set(doc["versionInfo"]) == {
        "version", "revision", "branch", "buildUser", "buildDate", "goVersion"
    }  # fmt: skip
    assert doc["config"] == {"original": "route: {}\n"}
    assert doc["uptime"] == "2026-09-21T14:13:20Z"


def test_a_bad_receiver_regex_is_a_filter_error() -> None:
    with pytest.raises(FilterError):
        AlertFilter.of({"receiver": "("}, [])
