"""Hostile writes to the silences API: cross-site shapes, non-finite or absurd times, oversized
bodies, and what the API and ``inferwatch silence list`` do with what they get back."""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client import CollectorRegistry

from inferwatch.clock import FakeClock
from inferwatch.export.server import ExportServer
from inferwatch.labels import Matcher
from inferwatch.notify.silence import Silence, SilenceError, Silences
from inferwatch.notify.silence_api import SilenceAPI, format_listing, silence_from_body
from reliability.attack_table import AttackRow

NOW = 1_790_000_000.0
MUTE_ALL = [{"name": "alertname", "value": ".+", "isRegex": True, "isEqual": True}]


def body(**over: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "matchers": MUTE_ALL,
        "startsAt": NOW,
        "endsAt": "2099-01-01T00:00:00Z",
        "createdBy": "someone",
        "comment": "shh",
    }
    doc.update(over)
    return doc


Check = Callable[[httpx.AsyncClient, Silences], Awaitable[None]]


def serve(tmp_path: Path, check: Check, status: Callable[[], dict[str, Any]] = dict) -> None:
    silences = Silences()
    api = SilenceAPI(lambda: silences, tmp_path / "silences.json", FakeClock(NOW))

    async def no_events(**_kw: Any) -> list[dict[str, Any]]:
        return []

    async def main() -> None:
        server = ExportServer(CollectorRegistry(), status, no_events, silences=api)
        host, port = await server.start("127.0.0.1", 0)
        try:
            async with httpx.AsyncClient(
                base_url=f"http://{host}:{port}", trust_env=False, timeout=10
            ) as client:
                await check(client, silences)
        finally:
            await server.stop()

    asyncio.run(main())


# -- item: a browser's cross-site shape is refused like Alertmanager refuses it ---------------


@pytest.mark.parametrize(
    "content_type", ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data", None]
)
def test_a_write_without_a_json_content_type_is_refused_with_415(
    tmp_path: Path, content_type: str | None, attack: AttackRow
) -> None:
    attack.describe(
        'CSRF shape: POST/DELETE silence muting alertname=~".+" until 2099, non-JSON type',
        "415, nothing muted or expired",
    )

    async def check(client: httpx.AsyncClient, silences: Silences) -> None:
        headers = {"Content-Type": content_type} if content_type else {}
        raw = json.dumps(body()).encode()
        r = await client.post("/api/v1/silences", content=raw, headers=headers)
        attack.saw(f"POST {r.status_code}, {len(silences.all())} silences")
        assert r.status_code == 415, r.text
        assert "application/json" in r.json()["error"]
        assert silences.all() == []
        ok = await client.post("/api/v1/silences", json=body(matchers=[_eq("engine", "a")]))
        assert ok.status_code == 200
        sid = ok.json()["silenceID"]
        r = await client.delete(f"/api/v1/silences/{sid}", headers=headers)
        attack.saw(f"DELETE {r.status_code}")
        assert r.status_code == 415
        assert silences.all()[0].ends_at > NOW  # still running
        r = await client.delete(
            f"/api/v1/silences/{sid}", headers={"Content-Type": "application/json; charset=utf-8"}
        )
        assert r.status_code == 200

    serve(tmp_path, check)


def _eq(name: str, value: str) -> dict[str, Any]:
    return {"name": name, "value": value, "isRegex": False, "isEqual": True}


# -- item: times, counts and sizes -------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ('"endsAt": NaN', "finite"),
        ('"endsAt": Infinity', "finite"),
        ('"endsAt": -Infinity', "finite"),
        ('"endsAt": 1e300', "between"),
        ('"startsAt": NaN', "finite"),
        ('"endsAt": 1e400', "finite"),
    ],
)
def test_non_finite_or_absurd_times_are_refused_with_400(
    tmp_path: Path, raw: str, message: str, attack: AttackRow
) -> None:
    attack.describe(f"silence with {raw}", "400, nothing stored")
    doc = body()
    key = raw.split('"')[1]
    del doc[key]
    text = json.dumps(doc)[:-1] + ", " + raw + "}"

    async def check(client: httpx.AsyncClient, silences: Silences) -> None:
        r = await client.post(
            "/api/v1/silences", content=text, headers={"Content-Type": "application/json"}
        )
        attack.saw(f"{r.status_code}: {r.text[:60]}")
        assert r.status_code == 400, r.text
        assert message in r.json()["error"]
        assert silences.all() == []

    serve(tmp_path, check)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"endsAt": math.nan}, "finite"),
        ({"endsAt": math.inf}, "finite"),
        ({"endsAt": 1e300}, "between"),
        ({"startsAt": -1e300}, "between"),
        ({"endsAt": "+275760-09-13T00:00:00Z"}, "RFC 3339"),
        ({"matchers": [_eq(f"l{i}", "x") for i in range(65)]}, "at most 64 matchers"),
        ({"matchers": [_eq("engine", "x" * 4097)]}, "4096"),
        ({"matchers": [_eq("e" * 4097, "x")]}, "4096"),
        ({"comment": "c" * 4097}, "4096"),
        ({"createdBy": "c" * 4097}, "4096"),
    ],
)
def test_silence_from_body_limits(change: dict[str, Any], message: str, attack: AttackRow) -> None:
    attack.describe(
        f"silence field {next(iter(change))} too large or absurd", f"refused: {message}"
    )
    with pytest.raises(SilenceError, match=message) as info:
        silence_from_body(body(**change), NOW)
    attack.saw(str(info.value)[:80])


def test_limits_allow_what_people_use(attack: AttackRow) -> None:
    attack.describe("64 matchers of 4096-byte values, ends 9999-12-31", "accepted (at the limits)")
    many = [_eq(f"l{i}", "x" * 4096) for i in range(64)]
    s = silence_from_body(body(matchers=many, endsAt="9999-12-31T23:59:59Z"), NOW)
    attack.saw(f"accepted with {len(s.matchers)} matchers")
    assert len(s.matchers) == 64


def test_a_stored_silence_must_have_finite_times(attack: AttackRow) -> None:
    attack.describe("a stored silence ending NaN, Infinity or 1e300", "refused by validate()")
    m = (Matcher.of("alertname", "=", "X"),)
    for ends in (math.nan, math.inf, 1e300):
        with pytest.raises(SilenceError):
            Silence("a", m, NOW, ends, "me", "why").validate()
        attack.saw(f"{ends} refused")


def test_an_oversized_or_deeply_nested_body_is_refused(tmp_path: Path, attack: AttackRow) -> None:
    attack.describe("a 70 KB silence body, then 30,000-deep JSON", "413, then 400; server unharmed")

    async def check(client: httpx.AsyncClient, silences: Silences) -> None:
        json_ct = {"Content-Type": "application/json"}
        big = json.dumps(body(comment="x" * 70_000))
        r = await client.post("/api/v1/silences", content=big, headers=json_ct)
        attack.saw(f"70 KB: {r.status_code}")
        assert r.status_code == 413, r.text
        assert "65536" in r.json()["error"]
        deep = "[" * 30_000 + "]" * 30_000
        r = await client.post("/api/v1/silences", content=deep, headers=json_ct)
        attack.saw(f"deep: {r.status_code}")
        assert r.status_code == 400, r.text
        assert silences.all() == []
        assert (await client.get("/healthz")).status_code == 200

    serve(tmp_path, check)


# -- item: the API emits only standard JSON; the CLI listing never crashes ---------------------


def test_responses_never_carry_nan_or_infinity(tmp_path: Path, attack: AttackRow) -> None:
    attack.describe("status values NaN and ±Infinity", "standard JSON (null), never NaN")

    def status() -> dict[str, Any]:
        return {"a": math.nan, "b": [math.inf, -math.inf], "c": {"d": 1.5}}

    async def check(client: httpx.AsyncClient, _silences: Silences) -> None:
        r = await client.get("/api/v1/status")
        assert r.status_code == 200
        doc = json.loads(r.text, parse_constant=_refuse)
        attack.saw(r.text[:60])
        assert doc == {"a": None, "b": [None, None], "c": {"d": 1.5}}

    serve(tmp_path, check, status)


def _refuse(name: str) -> None:
    raise AssertionError(f"non-standard JSON constant {name}")


@pytest.mark.parametrize(
    "item",
    [
        {"id": "x", "endsAt": 1e300},
        {"id": "x", "endsAt": None, "startsAt": "soon"},
        {"id": "x", "matchers": "nope"},
        {"id": "x", "matchers": [{"name": "a"}]},
        {"id": "x", "status": "weird"},
        "not an object",
        {},
    ],
)
def test_the_listing_survives_whatever_the_api_returns(item: Any, attack: AttackRow) -> None:
    attack.describe(f"`silence list` fed {str(item)[:40]}", "one line, no crash")
    good = {
        "id": "x",
        "matchers": [_eq("a", "b")],
        "startsAt": NOW,
        "endsAt": NOW + 60,
        "createdBy": "me",
        "comment": "why",
        "status": {"state": "active"},
    }
    if isinstance(item, dict):
        item = {**good, **item}
    lines = format_listing({"silences": [item]})
    attack.saw(f"{len(lines)} line: {lines[0][:50]!r}" if lines else "no line")
    assert len(lines) == 1 and isinstance(lines[0], str)
    assert format_listing({"silences": "garbage"}) == []
