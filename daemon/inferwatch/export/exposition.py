"""The /metrics body: Prometheus text format 0.0.4, written straight from the store's families.

Byte for byte what ``prometheus_client.generate_latest`` writes for the same collectors (its
default name escaping, underscores; tests/export/test_exposition.py compares the two), at a
fraction of its cost: a scrape of a host with 8 GPUs spent most of its time building sample
objects and validating and escaping the same few hundred names character by character. Here the
text before a sample's value (name and labels) is built once per series and remembered; a label
value is escaped (backslash, double quote, newline, as the format requires) only when it holds
one of those; numbers are written by prometheus_client's own ``floatToGoString`` (Go's shortest
form, ``+Inf``, ``-Inf``, ``NaN``). Other collectors (the process metrics) go through the same
writer from their ``Metric`` objects.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, cast

from prometheus_client.metrics_core import Metric
from prometheus_client.openmetrics.exposition import escape_label_name, escape_metric_name
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

from inferwatch.export.collector import StoreCollector
from inferwatch.labels import Labels

#: Families whose type the text format names otherwise (what generate_latest does).
_TYPE_NAMES = {"info": "gauge", "stateset": "gauge", "gaugehistogram": "histogram",
               "unknown": "untyped"}  # fmt: skip
#: OpenMetrics-only samples: moved into a gauge family of their own after their family.
_OM_SUFFIXES = ("_created", "_gsum", "_gcount")
#: Remembered sample heads beyond which the memory is started afresh (series churn).
_MAX_HEADS = 1 << 16

Sample = tuple[str, Labels, float, Any]  # name, labels, value, timestamp (None, float, Timestamp)
#: prometheus_client's number format (Go's), typed.
_number = cast(Callable[[float], str], floatToGoString)


class Exposition(Collector):
    """The collectors behind /metrics: the store's first, then the others (process metrics)."""

    def __init__(self, store: StoreCollector | None, *others: Collector) -> None:
        self.store = store
        self.others = others
        self._heads: dict[tuple[str, Labels], str] = {}
        self._names: dict[str, str] = {}

    def collect(self) -> Iterator[Metric]:
        if self.store is not None:
            yield from self.store.collect()
        for other in self.others:
            yield from other.collect()

    def render(self) -> bytes:
        out: list[str] = []
        for family in self.store.families() if self.store is not None else ():
            own: Iterable[Sample] = ((n, labels, v, None) for n, labels, v in family.samples)
            self._family(out, family.name, family.kind, family.help, own)
        for other in self.others:
            for metric in other.collect():
                samples = (
                    (s.name, tuple(sorted(s.labels.items())), s.value, s.timestamp)
                    for s in metric.samples
                )
                self._family(out, metric.name, metric.type, metric.documentation, samples)
        if len(self._heads) > _MAX_HEADS:
            self._heads.clear()
            self._names.clear()
        return "".join(out).encode("utf-8")

    def _family(
        self, out: list[str], name: str, kind: str, doc: str, samples: Iterable[Sample]
    ) -> None:
        shown = name + "_total" if kind == "counter" else name + "_info" if kind == "info" else name
        shown = self._name(shown)
        doc = doc.replace("\\", r"\\").replace("\n", r"\n")
        out.append(f"# HELP {shown} {doc}\n# TYPE {shown} {_TYPE_NAMES.get(kind, kind)}\n")
        special = {name + suffix: suffix for suffix in _OM_SUFFIXES}
        extra: dict[str, list[str]] = {}
        heads = self._heads
        for sample_name, labels, value, stamp in samples:
            head = heads.get((sample_name, labels))
            if head is None:
                head = heads[sample_name, labels] = self._head(sample_name, labels)
            if stamp is None:
                line = f"{head} {_number(value)}\n"
            else:
                line = f"{head} {_number(value)} {int(float(stamp) * 1000):d}\n"
            suffix = special.get(sample_name)
            if suffix is None:
                out.append(line)
            else:
                extra.setdefault(suffix, []).append(line)
        for suffix, lines in sorted(extra.items()):
            extra_name = self._name(name + suffix)
            out.append(f"# HELP {extra_name} {doc}\n# TYPE {extra_name} gauge\n")
            out.extend(lines)

    def _name(self, name: str) -> str:
        escaped = self._names.get(name)
        if escaped is None:
            escaped = self._names[name] = escape_metric_name(name)
        return escaped

    def _head(self, name: str, labels: Labels) -> str:
        if not labels:
            return self._name(name)
        pairs = ",".join(f'{escape_label_name(k)}="{_label_value(v)}"' for k, v in sorted(labels))
        return f"{self._name(name)}{{{pairs}}}"


def _label_value(value: str) -> str:
    if "\\" in value or "\n" in value or '"' in value:
        return value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")
    return value


def render(collector: Collector) -> bytes:
    """The text exposition of ``collector`` (an :class:`Exposition` or any other collector)."""
    if isinstance(collector, Exposition):
        return collector.render()
    return Exposition(None, collector).render()
