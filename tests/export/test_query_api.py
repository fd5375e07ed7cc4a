from __future__ import annotations

import asyncio
from typing import Any

import httpx
from prometheus_client import CollectorRegistry

from inferwatch.clock import FakeClock
from inferwatch.event import Kind
from inferwatch.export.query_api import QueryAPI
from inferwatch.export.server import ExportServer
from inferwatch.labels import make_labels
from inferwatch.store.tsdb import SeriesStore


async def _no_events(**_kwargs: Any) -> list[dict[str, Any]]:
    return []


def _store() -> tuple[SeriesStore, FakeClock]:
    clock = FakeClock(1000.0)
    store = SeriesStore(clock)
    store.describe("temp", Kind.GAUGE, "t")
    for i in range(7):  # 1000, 1010, ..., 1060
        store.set("temp", make_labels({"gpu": "0"}), 40.0 + i)
        store.set("temp", make_labels({"gpu": "1"}), 60.0)
        clock.advance(10)
    return store, clock


def _get(path: str, params: dict[str, str]) -> httpx.Response:
    store, clock = _store()

    async def go() -> httpx.Response:
        server = ExportServer(CollectorRegistry(), dict, _no_events)
        server.app.add_routes(QueryAPI(store, clock.time).routes())
        host, port = await server.start("127.0.0.1", 0)
        try:
            async with httpx.AsyncClient(trust_env=False, timeout=10) as client:
                return await client.get(f"http://{host}:{port}{path}", params=params)
        finally:
            await server.stop()

    return asyncio.run(go())


def test_instant_query_has_prometheus_shape() -> None:
    r = _get("/api/v1/query", {"query": 'temp{gpu="0"}', "time": "1030"})
    assert r.status_code == 200
    assert r.json() == {
        "status": "success",
        "data": {
            "resultType": "vector",
            "result": [{"metric": {"__name__": "temp", "gpu": "0"}, "value": [1030, "43"]}],
        },
    }


def test_instant_query_defaults_to_now_and_takes_rfc3339() -> None:
    now = _get("/api/v1/query", {"query": "max(temp)"}).json()
    assert now["data"]["result"][0]["value"] == [1070.0, "60"]
    at = _get("/api/v1/query", {"query": "scalar(temp{gpu='0'})", "time": "1970-01-01T00:16:50Z"})
    assert at.json()["data"] == {"resultType": "scalar", "result": [1010, "41"]}


def test_range_query_returns_a_matrix_per_series() -> None:
    r = _get(
        "/api/v1/query_range", {"query": "temp", "start": "1000", "end": "1060", "step": "30s"}
    )
    data = r.json()["data"]
    assert data["resultType"] == "matrix"
    by_gpu = {s["metric"]["gpu"]: s["values"] for s in data["result"]}
    assert by_gpu["0"] == [[1000, "40"], [1030, "43"], [1060, "46"]]
    assert by_gpu["1"] == [[1000, "60"], [1030, "60"], [1060, "60"]]


def test_errors_are_answered_as_prometheus_does() -> None:
    bad = _get("/api/v1/query", {"query": "sum(("})
    assert bad.status_code == 400
    doc = bad.json()
    assert doc["status"] == "error" and doc["errorType"] == "bad_data"
    assert doc["error"].startswith('invalid parameter "query"')
    when = _get("/api/v1/query", {"query": "temp", "time": "yesterday"}).json()
    assert (
        when["error"] == 'invalid parameter "time": cannot parse "yesterday" to a valid timestamp'
    )
    step = _get("/api/v1/query_range", {"query": "temp", "start": "1", "end": "2", "step": "0"})
    assert step.status_code == 400 and "zero or negative" in step.json()["error"]
    backwards = _get(
        "/api/v1/query_range", {"query": "temp", "start": "9", "end": "2", "step": "1"}
    )
    assert "end timestamp must not be before start time" in backwards.json()["error"]
    many = _get("/api/v1/query_range", {"query": "temp", "start": "0", "end": "20000", "step": "1"})
    assert "11,000 points" in many.json()["error"]
    text = _get("/api/v1/query_range", {"query": '"x"', "start": "0", "end": "9", "step": "1"})
    assert text.json()["errorType"] == "bad_data" and "string" in text.json()["error"]


def test_evaluation_failure_is_an_execution_error() -> None:
    # two series with one label set after dropping gpu: Prometheus fails the vector
    r = _get("/api/v1/query", {"query": "label_replace(temp, 'gpu', 'x', '', '')", "time": "1030"})
    assert r.status_code == 422
    assert r.json()["errorType"] == "execution"
