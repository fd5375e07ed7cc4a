"""How many series the store takes: in all, per metric name, and values per label.

Series are born from what the host writes: a log line ``Engine 4711: …`` makes a ``dp_rank``,
a SpecDecoding line's per-position list makes ``position`` values, a recording rule makes what
its expression finds. Each is bounded here, when a series would join the store: past a limit
the new series is dropped (its sample with it), counted in ``inferwatch_series_dropped_total``
by ``reason`` and logged once per reason and metric. Series that exist go on as before; no
limit ever raises. Memory stays bounded: the store holds at most ``series_total`` series, and
this keeps at most the limit of each label's values.

Reasons: ``series_total``, ``series_per_metric``, ``label_values`` (per ``(metric, label)``),
and ``alerts_per_rule`` (counted by the rule manager when a rule exceeds its limit).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, NamedTuple

from inferwatch.labels import Labels
from inferwatch.logsetup import get_logger

log = get_logger("store")

DROPPED = "inferwatch_series_dropped_total"
DROPPED_HELP = "Series (or alerts) refused because a limit was reached, by reason."
SERIES_TOTAL = "series_total"
SERIES_PER_METRIC = "series_per_metric"
LABEL_VALUES = "label_values"
ALERTS_PER_RULE = "alerts_per_rule"

_LOGGED_MAX = 256  # (reason, metric) pairs logged; more are only counted


class SeriesLimits(NamedTuple):
    """No limit unless given (promtool's tests, a bare store); the daemon and replay pass the
    config's ``limits:`` section."""

    series_total: int = sys.maxsize
    series_per_metric: int = sys.maxsize
    label_values: Mapping[str, int] = MappingProxyType({})  # read-only: one shared is safe


class Admission:
    """Says whether a new series may join; remembers the label values it let in."""

    def __init__(self, limits: SeriesLimits) -> None:
        self.limits = limits
        self._values: dict[tuple[str, str], set[str]] = {}
        self.dropped: dict[str, int] = {}
        self._logged: set[tuple[str, str]] = set()

    def refusal(self, name: str, labels: Labels, family_size: int, total: int) -> str | None:
        """The reason a new series (``name``, ``labels``) may not join, or None."""
        if name == DROPPED:
            return None  # the store's own account of drops is never dropped
        limits = self.limits
        if total >= limits.series_total:
            return SERIES_TOTAL
        if family_size >= limits.series_per_metric:
            return SERIES_PER_METRIC
        bounded = limits.label_values
        for label, value in labels:
            limit = bounded.get(label)
            if limit is not None:
                seen = self._values.get((name, label))
                if seen is not None and value not in seen and len(seen) >= limit:
                    return LABEL_VALUES
        return None

    def joined(self, name: str, labels: Labels) -> None:
        bounded = self.limits.label_values
        for label, value in labels:
            if label in bounded:
                self._values.setdefault((name, label), set()).add(value)

    def count(self, reason: str, name: str, labels: Labels, n: int = 1) -> None:
        self.dropped[reason] = self.dropped.get(reason, 0) + n
        key = (reason, name)
        if key not in self._logged and len(self._logged) < _LOGGED_MAX:
            self._logged.add(key)
            log.warning(
                "limit reached: new series dropped (counted in " + DROPPED + ")",
                reason=reason, metric=name, labels=dict(labels), limit=self._limit(reason),
            )  # fmt: skip

    def _limit(self, reason: str) -> int | Mapping[str, int] | None:
        if reason == SERIES_TOTAL:
            return self.limits.series_total
        if reason == SERIES_PER_METRIC:
            return self.limits.series_per_metric
        if reason == LABEL_VALUES:
            return dict(self.limits.label_values)
        return None

    def status(self, families: Mapping[str, int], total: int) -> dict[str, Any]:
        """Limits, how close the store is to each, and what was dropped (``/api/v1/status``)."""
        largest = sorted(families.items(), key=lambda kv: (-kv[1], kv[0]))[:5]
        values: dict[str, dict[str, Any]] = {}
        for label, limit in sorted(self.limits.label_values.items()):
            counts = [(len(v), n) for (n, lab), v in self._values.items() if lab == label]
            most = max(counts, default=(0, ""))
            values[label] = {"limit": limit, "most": most[0], "metric": most[1] or None}
        return {
            "series_total": {"limit": self.limits.series_total, "current": total},
            "series_per_metric": {
                "limit": self.limits.series_per_metric,
                "largest": [{"metric": n, "series": c} for n, c in largest],
            },
            "label_values": values,
            "dropped": dict(sorted(self.dropped.items())),
        }
