"""Read-only ``/api/v1/query`` and ``/api/v1/query_range`` in Prometheus's HTTP API shapes, served
by the daemon's own PromQL engine over its store.

    GET /api/v1/query?query=up&time=1700000000
    GET /api/v1/query_range?query=rate(x[5m])&start=…&end=…&step=15s

Answers are ``{"status": "success", "data": {"resultType": …, "result": …}}``; a bad parameter
or expression is HTTP 400 ``{"status": "error", "errorType": "bad_data", "error": …}``, an
evaluation failure HTTP 422 with ``errorType: execution``, as Prometheus answers. Times are Unix
seconds or RFC 3339; ``step`` is seconds or a Prometheus duration. :func:`instant` and
:func:`range_query` are the same queries for in-process callers (the status page's sparklines).
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from inferwatch.durations import DurationError, parse_duration_s
from inferwatch.export import jsonio
from inferwatch.golang.floats import format_plain
from inferwatch.promql.engine import (
    EvalError,
    PromQLError,
    Scalar,
    String,
    ValueType,
    Vector,
    evaluate,
    load,
)
from inferwatch.store.tsdb import SeriesStore

MAX_POINTS = 11_000  # Prometheus's limit of points per series in a range query
Point = tuple[float, float]


class ApiError(Exception):
    """An answer Prometheus would give as ``errorType`` with ``error``."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind

    @property
    def http_status(self) -> int:
        return 422 if self.kind == "execution" else 400


@dataclass(frozen=True, slots=True)
class RangeSeries:
    """One series of a range query: its labels (``__name__`` included when kept) and points."""

    metric: dict[str, str]
    points: list[Point]


def parse_time(name: str, text: str) -> float:
    """Unix seconds (``1700000000.5``) or RFC 3339 (``2026-01-02T03:04:05Z``)."""
    try:
        value = float(text)
    except ValueError:
        try:
            stamp = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            stamp = None
        if stamp is None or stamp.tzinfo is None:
            raise ApiError(
                "bad_data",
                f'invalid parameter "{name}": cannot parse "{text}" to a valid timestamp',
            ) from None
        return stamp.timestamp()
    if not math.isfinite(value):
        raise ApiError(
            "bad_data", f'invalid parameter "{name}": cannot parse "{text}" to a valid timestamp'
        )
    return value


def parse_step(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        try:
            value = parse_duration_s(text)
        except DurationError:
            raise ApiError(
                "bad_data", f'invalid parameter "step": cannot parse "{text}" to a valid duration'
            ) from None
    if not math.isfinite(value) or value <= 0:
        raise ApiError(
            "bad_data",
            'invalid parameter "step": zero or negative query resolution step widths are not '
            "accepted. Try a positive integer",
        )
    return value


def _load(text: str) -> Any:
    if not text.strip():
        raise ApiError("bad_data", 'invalid parameter "query": no expression found in input')
    try:
        return load(text)
    except EvalError as exc:
        raise ApiError("execution", str(exc)) from None
    except PromQLError as exc:
        raise ApiError("bad_data", f'invalid parameter "query": {exc}') from None


def _run(query: Any, store: SeriesStore, t: float) -> Vector | Scalar | String:
    try:
        return evaluate(query, store, t)
    except PromQLError as exc:
        raise ApiError("execution", str(exc)) from None


def _stamp(t: float) -> float:
    return round(t, 3)


def instant(store: SeriesStore, text: str, t: float) -> dict[str, Any]:
    """The ``data`` of an instant query."""
    value = _run(_load(text), store, t)
    if isinstance(value, Scalar):
        return {"resultType": "scalar", "result": [_stamp(t), format_plain(value.value)]}
    if isinstance(value, String):
        return {"resultType": "string", "result": [_stamp(t), value.value]}
    return {
        "resultType": "vector",
        "result": [
            {"metric": dict(s.metric()), "value": [_stamp(t), format_plain(s.value)]} for s in value
        ],
    }


def range_query(
    store: SeriesStore, text: str, start: float, end: float, step: float
) -> list[RangeSeries]:
    """Evaluate ``text`` at ``start``, ``start + step``, … up to ``end``: series by label set."""
    if end < start:
        raise ApiError(
            "bad_data", 'invalid parameter "end": end timestamp must not be before start time'
        )
    if (end - start) / step > MAX_POINTS:
        raise ApiError(
            "bad_data",
            "exceeded maximum resolution of 11,000 points per timeseries. "
            "Try decreasing the query resolution (?step=XX)",
        )
    query = _load(text)
    if query.type not in (ValueType.VECTOR, ValueType.SCALAR):
        raise ApiError(
            "bad_data",
            f'invalid expression type "{query.type}" for range query, '
            "must be Scalar or instant Vector",
        )
    found: dict[tuple[tuple[str, str], ...], list[Point]] = {}
    steps = math.floor((end - start) / step + 1e-9)
    for i in range(steps + 1):
        t = start + i * step
        value = _run(query, store, t)
        if isinstance(value, Scalar):
            found.setdefault((), []).append((t, value.value))
        elif isinstance(value, list):
            for s in value:
                found.setdefault(s.metric(), []).append((t, s.value))
    return [RangeSeries(dict(k), v) for k, v in sorted(found.items())]


def matrix(series: list[RangeSeries]) -> dict[str, Any]:
    return {
        "resultType": "matrix",
        "result": [
            {"metric": s.metric, "values": [[_stamp(t), format_plain(v)] for t, v in s.points]}
            for s in series
        ],
    }


class QueryAPI:
    """The two routes, over ``store`` at the time ``now`` gives when a request omits it."""

    def __init__(self, store: SeriesStore, now: Callable[[], float]) -> None:
        self.store = store
        self.now = now

    def routes(self) -> list[web.RouteDef]:
        return [
            web.get("/api/v1/query", self._query),
            web.get("/api/v1/query_range", self._query_range),
        ]

    async def _query(self, request: web.Request) -> web.Response:
        return answer(lambda: self.query(request.query))

    async def _query_range(self, request: web.Request) -> web.Response:
        return answer(lambda: self.query_range(request.query))

    def query(self, params: Mapping[str, str]) -> dict[str, Any]:
        t = parse_time("time", params["time"]) if "time" in params else self.now()
        return instant(self.store, params.get("query", ""), t)

    def query_range(self, params: Mapping[str, str]) -> dict[str, Any]:
        start = parse_time("start", params.get("start", ""))
        end = parse_time("end", params.get("end", ""))
        step = parse_step(params.get("step", ""))
        return matrix(range_query(self.store, params.get("query", ""), start, end, step))


def answer(compute: Callable[[], dict[str, Any]]) -> web.Response:
    try:
        doc: dict[str, Any] = {"status": "success", "data": compute()}
        status = 200
    except ApiError as exc:
        doc = {"status": "error", "errorType": exc.kind, "error": str(exc)}
        status = exc.http_status
    return web.Response(text=jsonio.dumps(doc), status=status, content_type="application/json")


__all__ = ["ApiError", "QueryAPI", "RangeSeries", "instant", "matrix", "range_query"]
