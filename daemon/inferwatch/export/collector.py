"""A prometheus_client Collector that builds fresh metric families from the store on each scrape.

No long-lived Gauge objects: a series that went stale (no sample for 5 minutes, or a staleness
marker) simply stops appearing, so a vanished GPU or engine needs no bookkeeping.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from inferwatch.clock import Clock
from inferwatch.model import Kind
from inferwatch.store.histogram import SUFFIXES, histogram_base
from inferwatch.store.tsdb import SeriesStore

_FALLBACK_HELP = "inferwatch series (no description registered)."


class StoreCollector(Collector):
    def __init__(self, store: SeriesStore, clock: Clock) -> None:
        self.store = store
        self.clock = clock

    def collect(self) -> Iterator[Metric]:
        now = self.clock.time()
        names = list(self.store.names())
        histograms = {m for n in names if (m := _declared_base(self.store, n))}
        grouped: dict[str, Metric] = {}
        for name in names:
            base = histogram_base(name, histograms)
            meta = self.store.meta(base or name)
            kind = meta.kind if meta else None
            family = grouped.get(base) if base else None
            for s in self.store.family(name):
                value = self.store.current(s, now)
                if value is None:
                    continue
                if family is None:
                    help_text = meta.help if meta else _FALLBACK_HELP
                    if base:
                        family = grouped[base] = Metric(base, help_text, "histogram")
                    else:
                        family = _family(name, kind or s.kind, help_text)
                family.add_sample(name, dict(s.labels), value)
            if family is not None and not base:
                yield family
        yield from grouped.values()


def _is_histogram(store: SeriesStore, name: str) -> bool:
    meta = store.meta(name)
    return meta is not None and meta.kind is Kind.HISTOGRAM


def _declared_base(store: SeriesStore, name: str) -> str | None:
    for suffix in SUFFIXES:
        if name.endswith(suffix) and _is_histogram(store, base := name.removesuffix(suffix)):
            return base
    return None


def _family(name: str, kind: Kind, help_text: str) -> Metric:
    if kind is Kind.COUNTER:
        # prometheus_client names counter families without the _total suffix.
        return Metric(name.removesuffix("_total"), help_text, "counter")
    return Metric(name, help_text, "gauge")
