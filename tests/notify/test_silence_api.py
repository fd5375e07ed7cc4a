"""The silences API: Alertmanager's validation, persistence to silences.json, and the HTTP routes
of the export server (real aiohttp on 127.0.0.1, driven with httpx)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client import CollectorRegistry

from inferwatch.clock import FakeClock
from inferwatch.export.server import ExportServer
from inferwatch.notify.silence import SilenceError, Silences
from inferwatch.notify.silence_api import (
    SilenceAPI,
    SilenceNotFoundError,
    SilencePersistError,
    format_listing,
    request_body,
    silence_from_body,
)

NOW = 1_790_000_000.0


def body(**over: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "matchers": [{"name": "engine", "value": "main", "isRegex": False, "isEqual": True}],
        "startsAt": "2026-09-21T14:13:20Z",
        "endsAt": NOW + 7200,
        "createdBy": "owner",
        "comment": "model swap",
    }
    doc.update(over)
    return doc


def test_a_valid_body_becomes_a_silence() -> None:
    s = silence_from_body(body(), NOW)
    assert (s.starts_at, s.ends_at, s.created_by, s.comment) == (
        NOW,
        NOW + 7200,
        "owner",
        "model swap",
    )
    assert [(m.name, m.op.value, m.value) for m in s.matchers] == [("engine", "=", "main")]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"matchers": []}, "at least one matcher"),
        ({"matchers": [{"name": "a", "value": "", "isEqual": True}]}, "empty label set"),
        ({"matchers": [{"name": "0bad", "value": "x"}]}, "invalid label name"),
        ({"matchers": [{"name": "a", "value": "(", "isRegex": True}]}, "invalid regex"),
        ({"comment": "  "}, "comment is required"),
        ({"createdBy": ""}, "createdBy is required"),
        ({"endsAt": NOW - 1}, "in the future"),
        ({"startsAt": NOW + 9000}, "after startsAt"),
        ({"startsAt": "yesterday"}, "RFC 3339"),
        ({"startsAt": "2026-09-21T14:13:20"}, "RFC 3339"),
        ({"id": "abc"}, "not supported"),
    ],
)
def test_alertmanager_validation(change: dict[str, Any], message: str) -> None:
    with pytest.raises(SilenceError, match=message):
        silence_from_body(body(**change), NOW)


def test_a_start_in_the_past_means_now() -> None:
    assert silence_from_body(body(startsAt=NOW - 600), NOW).starts_at == NOW


def test_create_and_expire_persist_to_the_file(tmp_path: Path) -> None:
    clock = FakeClock(NOW)
    silences = Silences(new_id=lambda: "s1")
    path = tmp_path / "silences.json"
    api = SilenceAPI(lambda: silences, path, clock)
    assert api.create(body()).id == "s1"
    again = Silences()
    assert again.load(path) == 1 and again.all()[0].comment == "model swap"
    assert api.list_all()["silences"][0]["status"] == {"state": "active"}
    clock.advance(60)
    assert api.expire("s1").ends_at == NOW + 60
    again.load(path)
    assert again.all()[0].ends_at == NOW + 60
    assert api.list_all()["silences"][0]["status"] == {"state": "expired"}
    with pytest.raises(SilenceNotFoundError):
        api.expire("nope")


def test_the_cli_body_round_trips_through_the_api() -> None:
    doc = request_body(['alertname="X"', 'gpu=~"0|1"'], "2h", "swap", "me", NOW)
    s = silence_from_body(json.loads(json.dumps(doc)), NOW)
    assert s.ends_at - s.starts_at == 7200
    assert [(m.name, m.op.value) for m in s.matchers] == [("alertname", "="), ("gpu", "=~")]
    listing = format_listing(
        {"silences": [{**s.to_dict(), "id": "x", "status": {"state": "active"}}]}
    )
    assert listing == [
        'x  active   until 2026-09-21T16:13:20Z  {alertname="X",gpu=~"0|1"}  by me: swap'
    ]
    with pytest.raises(ValueError, match="duration"):
        request_body(['alertname="X"'], "soon", "swap", "me", NOW)
    with pytest.raises(ValueError, match="matcher"):
        request_body([""], "1h", "swap", "me", NOW)


def serve(api: SilenceAPI, check: Callable[[httpx.AsyncClient], Any]) -> None:
    async def main() -> None:
        server = ExportServer(CollectorRegistry(), dict, _no_events, silences=api)
        host, port = await server.start("127.0.0.1", 0)
        try:
            async with httpx.AsyncClient(
                base_url=f"http://{host}:{port}", trust_env=False, timeout=10
            ) as client:
                await check(client)
        finally:
            await server.stop()

    asyncio.run(main())


async def _no_events(**_kw: Any) -> list[dict[str, Any]]:
    return []


def test_http_routes(tmp_path: Path) -> None:
    api = SilenceAPI(lambda: silences, tmp_path / "silences.json", FakeClock(NOW))
    silences = Silences(new_id=lambda: "s1")

    async def check(client: httpx.AsyncClient) -> None:
        r = await client.post("/api/v1/silences", json=body())
        assert (r.status_code, r.json()) == (200, {"silenceID": "s1"})
        r = await client.post("/api/v1/silences", json=body(comment=""))
        assert r.status_code == 400 and "comment" in r.json()["error"]
        json_ct = {"Content-Type": "application/json"}
        r = await client.post("/api/v1/silences", content=b"{not json", headers=json_ct)
        assert r.status_code == 400
        listed = (await client.get("/api/v1/silences")).json()["silences"]
        assert [(s["id"], s["status"]["state"]) for s in listed] == [("s1", "active")]
        r = await client.delete("/api/v1/silences/s1", headers=json_ct)
        assert r.status_code == 200 and r.json()["silenceID"] == "s1"
        r = await client.delete("/api/v1/silences/nope", headers=json_ct)
        assert r.status_code == 404

    serve(api, check)
    assert json.loads((tmp_path / "silences.json").read_text())["silences"][0]["id"] == "s1"


def test_without_an_api_the_routes_do_not_exist() -> None:
    async def main() -> int:
        server = ExportServer(CollectorRegistry(), dict, _no_events)
        host, port = await server.start("127.0.0.1", 0)
        try:
            async with httpx.AsyncClient(trust_env=False) as client:
                r = await client.get(f"http://{host}:{port}/api/v1/silences")
                return r.status_code
        finally:
            await server.stop()

    assert asyncio.run(main()) == 404


def test_a_change_that_cannot_be_saved_is_reported(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    api = SilenceAPI(Silences, tmp_path / "file" / "silences.json", FakeClock(NOW))
    with pytest.raises(SilencePersistError, match="not saved"):
        api.create(body())
