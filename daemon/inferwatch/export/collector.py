"""A prometheus_client Collector that builds fresh metric families from the store on each scrape.

No long-lived Gauge objects: a series that went stale (no sample for 5 minutes, or a staleness
marker) simply stops appearing, so a vanished GPU or engine needs no bookkeeping.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from inferwatch.clock import Clock
from inferwatch.store.series import Kind
from inferwatch.store.tsdb import SeriesStore

_FALLBACK_HELP = "inferwatch series (no description registered)."


class StoreCollector(Collector):
    def __init__(self, store: SeriesStore, clock: Clock) -> None:
        self.store = store
        self.clock = clock

    def collect(self) -> Iterator[Metric]:
        now = self.clock.time()
        for name in self.store.names():
            meta = self.store.meta(name)
            kind = meta.kind if meta else None
            family = None
            for s in self.store.family(name):
                value = self.store.current(s, now)
                if value is None:
                    continue
                if family is None:
                    kind = kind or s.kind
                    family = _family(name, kind, meta.help if meta else _FALLBACK_HELP)
                family.add_sample(name, dict(s.labels), value)
            if family is not None:
                yield family


def _family(name: str, kind: Kind, help_text: str) -> Metric:
    if kind is Kind.COUNTER:
        # prometheus_client names counter families without the _total suffix.
        return Metric(name.removesuffix("_total"), help_text, "counter")
    return Metric(name, help_text, "gauge")
