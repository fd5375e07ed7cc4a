"""A prometheus_client Collector that builds fresh metric families from the store on each scrape.

No long-lived Gauge objects: a series that went stale (no sample for 5 minutes, or a staleness
marker) simply stops appearing, so a vanished GPU or engine needs no bookkeeping.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from inferwatch.clock import Clock
from inferwatch.event import Kind
from inferwatch.labels import Labels
from inferwatch.store.histogram import SUFFIXES, histogram_base
from inferwatch.store.tsdb import SeriesStore

_FALLBACK_HELP = "inferwatch series (no description registered)."


@dataclass(slots=True)
class Family:
    """One metric family as the exposition shows it: prometheus_client's family name (a counter
    without ``_total``), type, help and its samples ``(sample name, labels, value)``."""

    name: str
    kind: str
    help: str
    samples: list[tuple[str, Labels, float]] = field(default_factory=list)


class StoreCollector(Collector):
    def __init__(self, store: SeriesStore, clock: Clock) -> None:
        self.store = store
        self.clock = clock

    def collect(self) -> Iterator[Metric]:
        for family in self.families():
            metric = Metric(family.name, family.help, family.kind)
            for name, labels, value in family.samples:
                metric.add_sample(name, dict(labels), value)
            yield metric

    def families(self) -> Iterator[Family]:
        """The live series by family, in exposition order (histograms last)."""
        store = self.store
        now = self.clock.time()
        names = list(store.names())
        histograms = {m for n in names if (m := _declared_base(store, n))}
        grouped: dict[str, Family] = {}
        for name in names:
            base = histogram_base(name, histograms)
            meta = store.meta(base or name)
            kind = meta.kind if meta else None
            family = grouped.get(base) if base else None
            for s in store.family(name):
                value = store.current(s, now)
                if value is None:
                    continue
                if family is None:
                    help_text = meta.help if meta else _FALLBACK_HELP
                    if base:
                        family = grouped[base] = Family(base, "histogram", help_text)
                    else:
                        family = _family(name, kind or s.kind, help_text)
                family.samples.append((name, s.labels, value))
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


def _family(name: str, kind: Kind, help_text: str) -> Family:
    if kind is Kind.COUNTER:
        # prometheus_client names counter families without the _total suffix.
        return Family(name.removesuffix("_total"), "counter", help_text)
    return Family(name, "gauge", help_text)
