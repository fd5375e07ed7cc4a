"""Histograms kept as Prometheus stores them: cumulative ``_bucket{le}``, ``_sum`` and ``_count``
counter series, so ``histogram_quantile`` and ``rate`` work on them in rules, and the exporter
shows one ``histogram`` family (:mod:`inferwatch.export.collector`)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from inferwatch.event import Kind
from inferwatch.labels import Labels, make_labels
from inferwatch.store.tsdb import SeriesStore

SUFFIXES = ("_bucket", "_sum", "_count")


def _le(bound: float) -> str:
    return "+Inf" if math.isinf(bound) else repr(float(bound))


def describe_histogram(store: SeriesStore, name: str, help_text: str) -> None:
    store.describe(name, Kind.HISTOGRAM, help_text)


def observe(
    store: SeriesStore,
    name: str,
    labels: Labels,
    value: float,
    buckets: Sequence[float],
    t: float | None = None,
) -> None:
    """Count one observation: every bucket whose upper bound is at least ``value`` (and +Inf)
    goes up by one; the others are created at their current value so the set is complete."""
    base = dict(labels)
    for bound in (*buckets, math.inf):
        le = make_labels({**base, "le": _le(bound)})
        store.inc(f"{name}_bucket", le, 1.0 if value <= bound else 0.0, t, wake=False)
    store.inc(f"{name}_sum", labels, value, t, wake=False)
    store.inc(f"{name}_count", labels, 1.0, t, wake=False)


def histogram_base(series_name: str, is_histogram: set[str]) -> str | None:
    """The histogram a stored series belongs to (``x_bucket`` → ``x``), if ``x`` is one."""
    for suffix in SUFFIXES:
        if series_name.endswith(suffix):
            base = series_name.removesuffix(suffix)
            if base in is_histogram:
                return base
    return None
