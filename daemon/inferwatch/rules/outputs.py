"""What one rule wrote last time, so what it stops writing ends with a staleness marker.

Prometheus's rule group does this for every rule (recorded series, ALERTS, ALERTS_FOR_STATE):
after an evaluation, each series the rule produced the time before but not this time gets a
marker at the evaluation time, so it vanishes at once instead of lingering for the 5-minute
lookback (reference/promql.md §1). A rule that fails writes nothing and marks nothing.
"""

from __future__ import annotations

from collections.abc import Iterable

from inferwatch.labels import Labels
from inferwatch.store.tsdb import SeriesStore

Row = tuple[str, Labels, float]


class RuleOutputs:
    def __init__(self) -> None:
        self.previous: set[tuple[str, Labels]] = set()

    def write(self, store: SeriesStore, rows: Iterable[Row], t: float) -> int:
        """Write this evaluation's rows; returns how many new series the store's limits
        refused (not written, so not remembered either)."""
        current: set[tuple[str, Labels]] = set()
        refused = 0
        for name, labels, value in rows:
            if store.set(name, labels, value, t):
                current.add((name, labels))
            else:
                refused += 1
        for name, labels in sorted(self.previous - current):
            store.mark_stale(name, labels, t)
        self.previous = current
        return refused

    def retire(self, store: SeriesStore, t: float) -> None:
        """The rule is gone (a reload removed it): end everything it wrote."""
        for name, labels in sorted(self.previous):
            store.mark_stale(name, labels, t)
        self.previous = set()
