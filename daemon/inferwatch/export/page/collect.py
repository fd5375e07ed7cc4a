"""What the page reads from the store, through the same PromQL engine and range evaluation as
``/api/v1/query`` and ``/api/v1/query_range``."""

from __future__ import annotations

from inferwatch.export.page.samples import Curve, Sample
from inferwatch.export.page.view import ENGINE_GAUGES, SPARKS
from inferwatch.export.query_api import range_query
from inferwatch.promql.engine import PromQLError, evaluate
from inferwatch.store.tsdb import SeriesStore

ENGINE_SELECTOR = '{__name__=~"' + "|".join(sorted(ENGINE_GAUGES.values())) + '"}'
GPU_SELECTOR = '{__name__=~"inferwatch_gpu_.+"}'
SPARK_POINTS = 60
SPARK_WINDOW_S = 3600.0


def samples(store: SeriesStore, t: float) -> list[Sample]:
    """The engines' and GPUs' current values (Prometheus's 5-minute lookback)."""
    out: list[Sample] = []
    for selector in (ENGINE_SELECTOR, GPU_SELECTOR):
        try:
            found = evaluate(selector, store, t)
        except PromQLError:
            continue
        if isinstance(found, list):
            out += [Sample(dict(s.metric()), s.value) for s in found]
    return out


def curves(store: SeriesStore, t: float) -> list[Curve]:
    """The last hour of decode, MAL and step rate (from the first sample when the store holds
    less: a fresh daemon's sparkline spans its few minutes, not one point at the right edge)."""
    span = engine_span(store)
    if span is None:
        return []
    start = max(t - SPARK_WINDOW_S, min(span[0], t - 60.0))
    return curves_between(store, start, t, SPARK_POINTS)


def curves_between(store: SeriesStore, start: float, end: float, points: int = 300) -> list[Curve]:
    """Decode, MAL and step rate over ``[start, end]`` in about ``points`` steps (the report)."""
    step = max(1.0, (end - start) / points)
    out: list[Curve] = []
    for key in SPARKS:
        out += [
            Curve(s.metric, s.points)
            for s in range_query(store, ENGINE_GAUGES[key], start, end, step)
        ]
    return out


def engine_span(store: SeriesStore) -> tuple[float, float] | None:
    """The first and last time any engine's decode, MAL or step rate was recorded (what the
    store still holds: a replay keeps the longest rule range, about a day, before its end)."""
    times: list[float] = []
    for key in SPARKS:
        for series in store.family(ENGINE_GAUGES[key]):
            ts, _ = series.samples()
            if len(ts):
                times += [ts[0], ts[-1]]
    return (min(times), max(times)) if times else None


__all__ = ["curves", "curves_between", "engine_span", "samples"]
