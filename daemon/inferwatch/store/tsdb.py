"""The in-memory series store every source writes into and every reader (rules, export) reads.

All methods run on the event loop thread; nothing here blocks or does I/O. Counters written with
:meth:`SeriesStore.inc` are *event counters*: the store carries their last value forward on every
:meth:`SeriesStore.tick`, as if a scraper read them every evaluation tick, so ``increase()`` over a
range sees a series that was born a moment ago and a quiet counter never goes stale.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import NamedTuple

from inferwatch.clock import Clock
from inferwatch.event import Kind
from inferwatch.labels import NAME_LABEL, Labels, Matcher, MatchOp, label_value
from inferwatch.store.limits import DROPPED, DROPPED_HELP, Admission, SeriesLimits
from inferwatch.store.series import STALE_NAN, Series, is_stale

DEFAULT_RETENTION_S = 2 * 3600.0
STALE_AFTER_S = 300.0
CARRY_EVERY_S = 10.0
#: After a restart, carried counters are bridged over this much of the gap (see ``bridge``).
BRIDGE_SPAN_S = 900.0
BRIDGE_STEP_S = 60.0
TRIM_EVERY_S = 60.0  # retention is coarse: trimming every tick would only cost time

ChangeListener = Callable[[str, Labels, float], None]


class MetricMeta(NamedTuple):
    """What the exporter needs to describe a metric family."""

    name: str
    kind: Kind
    help: str


class SeriesStore:
    def __init__(
        self,
        clock: Clock,
        retention_s: float = DEFAULT_RETENTION_S,
        stale_after_s: float = STALE_AFTER_S,
        limits: SeriesLimits | None = None,
        trim_every_s: float = TRIM_EVERY_S,
        reads: Callable[[str], bool] | None = None,
    ) -> None:
        """``reads``: the metric names anything will read (None: any); a gauge of another name
        is created as always (the limits, the series count and the generation see it) and keeps
        no samples (a batch run: ``inferwatch replay``, whose only readers are its rules)."""
        self.clock = clock
        self._reads = reads
        self.retention_s = retention_s
        self.trim_every_s = trim_every_s  # samples past retention live at most this much longer
        self.stale_after_s = stale_after_s
        self._by_name: dict[str, dict[Labels, Series]] = {}
        self._meta: dict[str, MetricMeta] = {}
        self._carried: list[Series] = []
        self._listeners: list[ChangeListener] = []
        self.rejected_samples = 0
        self._trimmed_at = -math.inf
        self._retention_by_name: dict[str, float] = {}
        self.generation = 0  # bumped whenever a series joins (readers cache selections on it)
        self.replaced = 0  # bumped when a snapshot's series takes the place of a held one
        self._total = 0
        self.admission = Admission(limits or SeriesLimits())
        self.describe(DROPPED, Kind.COUNTER, DROPPED_HELP)

    # -- metadata ---------------------------------------------------------------------------
    def describe(self, name: str, kind: Kind, help_text: str) -> None:
        self._meta[name] = MetricMeta(name, kind, help_text)

    def meta(self, name: str) -> MetricMeta | None:
        return self._meta.get(name)

    def require_retention(self, seconds: float, name: str | None = None) -> None:
        """Keep at least ``seconds`` of history, for one metric name or for all (a rule with a
        longer range asks for it: a 24-h baseline keeps 24 h of that one series only)."""
        if name is None:
            self.retention_s = max(self.retention_s, seconds)
        else:
            self._retention_by_name[name] = max(self._retention_by_name.get(name, 0.0), seconds)

    def set_limits(self, limits: SeriesLimits) -> None:
        """New limits (a reload): series held stay, new ones are judged by these."""
        self.admission.limits = limits

    def count_dropped(self, reason: str, name: str, labels: Labels, n: int = 1) -> None:
        """Count ``n`` refused series (or alerts) in ``inferwatch_series_dropped_total``."""
        self.admission.count(reason, name, labels, n)
        self.inc(DROPPED, (("reason", reason),), float(n), wake=False)

    # -- writing ----------------------------------------------------------------------------
    def _series(self, name: str, labels: Labels, kind: Kind, carry: bool = False) -> Series | None:
        """The series, created if the limits allow (None, counted, when they do not)."""
        family = self._by_name.get(name)
        s = family.get(labels) if family is not None else None
        if s is None:
            if not self._admit(name, labels, 0 if family is None else len(family)):
                return None
            s = Series(name, labels, kind, carry_forward=carry)
            if kind is Kind.GAUGE and not self.keeps(name):
                s.muted = True
            self._by_name.setdefault(name, {})[labels] = s
            self._total += 1
            self.generation += 1
            if carry:
                self._carried.append(s)
        return s

    def keeps(self, name: str) -> bool:
        """Whether readings of the gauge ``name`` are kept (``reads``)."""
        return self._reads is None or self._reads(name)

    def drops(self, name: str, labels: Labels) -> bool:
        """Whether a reading of the gauge series would change nothing: the store holds the
        series, and keeps no readings of it."""
        family = self._by_name.get(name)
        s = family.get(labels) if family is not None else None
        return s is not None and s.muted

    def _admit(self, name: str, labels: Labels, family_size: int) -> bool:
        reason = self.admission.refusal(name, labels, family_size, self._total)
        if reason is not None:
            self.count_dropped(reason, name, labels)
            return False
        self.admission.joined(name, labels)
        return True

    def _put(self, s: Series, t: float, v: float) -> None:
        if not s.append(t, v):
            self.rejected_samples += 1

    def set(self, name: str, labels: Labels, value: float, t: float | None = None) -> bool:
        """Record a gauge reading; False when a limit refused a new series."""
        family = self._by_name.get(name)  # the common case, a known series, without a detour
        s = family.get(labels) if family is not None else None
        if s is None:
            s = self._series(name, labels, Kind.GAUGE)
            if s is None:
                return False
        if t is None or math.isnan(t):  # no time: the clock's; NaN: refused by _t
            t = self._t(t)
        if s.muted:
            return True
        if not s.append(t, float(value)):
            self.rejected_samples += 1
        return True

    def set_counter(self, name: str, labels: Labels, value: float, t: float | None = None) -> None:
        """Mirror a cumulative counter read from elsewhere (resets are the reader's business)."""
        s = self._series(name, labels, Kind.COUNTER)
        if s is not None:
            self._put(s, self._t(t), float(value))

    def inc(
        self,
        name: str,
        labels: Labels,
        delta: float = 1.0,
        t: float | None = None,
        *,
        wake: bool = True,
    ) -> float:
        """Increment an event counter and tell the listeners (``wake=False`` for a steady
        throughput counter: the rules reading it run at their interval, not on each step);
        returns the new value (0 when a limit refused a new series)."""
        s = self._series(name, labels, Kind.COUNTER, carry=True)
        if s is None:
            return 0.0
        last = s.last_real()
        value = (last[1] if last else 0.0) + delta
        when = self._t(t)
        newest = s.last()
        if newest is not None and when < newest[0]:
            # An event older than what we hold (a late record): count it now, never rewrite history.
            when = newest[0]
        self._put(s, when, value)
        if wake:
            for listener in self._listeners:
                listener(name, labels, when)
        return value

    def inc_baseline(
        self, name: str, labels: Labels, delta: float, cover_s: float = 900.0, step_s: float = 30.0
    ) -> float:
        """Count an old event (one from before the daemon watched) so no rule sees news.

        A new series is written as if it had held its value for ``cover_s`` already, sampled
        every ``step_s``, so neither ``increase()`` nor a first-occurrence clause
        (``x unless x offset 5m``) fires on it. An existing series has its whole history raised
        by ``delta`` (a ring holding 14 old faults of one GPU must not page for the 2nd..14th).
        """
        s = self._by_name.get(name, {}).get(labels)
        if s is not None and len(s):
            s.raise_level(delta)
            last = s.last_real()
            return last[1] if last else delta
        s = self._series(name, labels, Kind.COUNTER, carry=True)
        if s is None:
            return 0.0
        now = self.clock.time()
        t = now - cover_s
        while t < now:
            s.append(t, delta)
            t += step_s
        s.append(now, delta)
        return delta

    def mark_stale(self, name: str, labels: Labels, t: float | None = None) -> None:
        """Say a series has ended (its GPU vanished, its engine stopped) with a staleness marker."""
        s = self._by_name.get(name, {}).get(labels)
        if s is not None and s.last() is not None and not is_stale(s.vs[-1]):
            self._put(s, self._t(t), STALE_NAN)

    def on_change(self, listener: ChangeListener) -> None:
        """Call ``listener(name, labels, t)`` whenever an event counter moves."""
        self._listeners.append(listener)

    def tick(self, t: float | None = None) -> None:
        """Carry event counters forward (a sample every :data:`CARRY_EVERY_S`, as a scrape would
        see them: dense enough for ``increase``/``offset``, sparse enough that a range over
        hundreds of quiet Xid counters stays cheap) and apply retention."""
        now = self._t(t)
        for s in self._carried:
            last = s.last()
            if last is not None and now - last[0] >= CARRY_EVERY_S and not is_stale(last[1]):
                s.append(now, last[1])
        if now - self._trimmed_at >= self.trim_every_s or now < self._trimmed_at:
            self.trim(now)

    def bridge(self, now: float) -> int:
        """After a restart: give each carried event counter its last value again across the
        last :data:`BRIDGE_SPAN_S` before ``now`` (one sample a minute).

        A counter restored from a snapshot taken long ago would otherwise carry forward at
        ``now`` with nothing in the minutes before: ``x unless x offset 5m``, the idiom that
        fires on a counter's first appearance, would read it as new and page again for an
        event announced before the restart. Bridged, the gap reads as "no change"; an event
        that happened while the daemon was down is still counted (at its late arrival), so
        ``increase()`` sees it. Returns the number of series bridged."""
        bridged = 0
        for s in self._carried:
            last = s.last()
            if last is None or is_stale(last[1]):
                continue
            t = max(last[0] + BRIDGE_STEP_S, now - BRIDGE_SPAN_S)
            if t >= now:
                continue
            while t < now:
                s.append(t, last[1])
                t += BRIDGE_STEP_S
            bridged += 1
        return bridged

    def trim(self, now: float) -> None:
        self._trimmed_at = now
        for name, family in self._by_name.items():
            keep = max(self.retention_s, self._retention_by_name.get(name, 0.0))
            horizon = now - keep
            for s in family.values():
                s.trim(horizon)

    # -- reading ----------------------------------------------------------------------------
    def get(self, name: str, labels: Labels) -> Series | None:
        return self._by_name.get(name, {}).get(labels)

    def names(self) -> list[str]:
        return sorted(self._by_name)

    def has(self, name: str) -> bool:
        """Whether a series of this metric name exists (series are never removed)."""
        return name in self._by_name

    def has_any(self, names: Iterable[str]) -> bool:
        """Whether a series of any of these metric names exists."""
        return not self._by_name.keys().isdisjoint(names)

    def family(self, name: str) -> Iterable[Series]:
        return self._by_name.get(name, {}).values()

    def all_series(self) -> Iterator[Series]:
        for family in self._by_name.values():
            yield from family.values()

    def series_count(self) -> int:
        return self._total

    def limits_status(self) -> dict[str, object]:
        """The limits, how near the store is to each, and what was dropped."""
        sizes = {name: len(family) for name, family in self._by_name.items()}
        return self.admission.status(sizes, self._total)

    def select(self, matchers: Sequence[Matcher]) -> list[Series]:
        """Series matching every matcher (``__name__`` included), as a PromQL selector does."""
        name_eq = [m.value for m in matchers if m.name == NAME_LABEL and m.op is MatchOp.EQ]
        families = [self._by_name.get(name_eq[0], {})] if name_eq else self._by_name.values()
        out: list[Series] = []
        for family in families:
            for s in family.values():
                if all(
                    m.matches(s.name if m.name == NAME_LABEL else label_value(s.labels, m.name))
                    for m in matchers
                ):
                    out.append(s)
        return out

    def current(self, s: Series, now: float | None = None) -> float | None:
        """The value to export now: the last sample unless stale or older than ``stale_after``."""
        last = s.last()
        if last is None or is_stale(last[1]):
            return None
        if self._t(now) - last[0] > self.stale_after_s:
            return None
        return last[1]

    def _t(self, t: float | None) -> float:
        if t is None:
            return self.clock.time()
        if math.isnan(t):
            raise ValueError("sample timestamp is NaN")
        return t

    # -- snapshot support -------------------------------------------------------------------
    def restore_series(self, s: Series) -> None:
        """Take a series from a snapshot (judged by the limits as a new one would be)."""
        family = self._by_name.get(s.name)
        if family is not None and s.labels in family:
            self._total -= 1
            self.replaced += 1  # a selection holding the old object is not valid any more
        elif not self._admit(s.name, s.labels, 0 if family is None else len(family)):
            return
        if s.kind is Kind.GAUGE and not self.keeps(s.name):
            s.muted = True  # as a series made here would be
        self._by_name.setdefault(s.name, {})[s.labels] = s
        self._total += 1
        self.generation += 1
        if s.carry_forward:
            self._carried.append(s)
