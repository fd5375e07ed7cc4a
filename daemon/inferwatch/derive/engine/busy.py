"""Busy periods of an engine and the verdict on what explains a decode difference between them.

reference/host.md, "The physics of decode speed": decode tokens/s ~ step rate x MAL. MAL moves
with the content (prose 2.1-3.5, patterned text 4-5.3), the step rate with the stack. A drop from
150 to 100 t/s at an unchanged step rate is a change of content, not a regression; a step rate
that falls at similar MAL is the stack. Comparing decode numbers alone is meaningless.

A busy period is a run of stats windows with at least one running request, where consecutive
busy windows are at most ``gap_intervals`` stats intervals apart (the interval is measured from
the stream's own spacing, since vLLM's is configurable and SGLang's follows the step rate).
Windows with nothing running do not belong to a period and do not break it; an idle stretch does,
because vLLM stops printing while idle. Per period and per concurrency (``periods.Cohort``, over
the decode-bound windows only): the median decode and per-request step rate, and MAL pooled from
the counts (engine.md 3.2 says never average MALs), falling back to the median of the window
MALs when the counts are unknown. Periods are compared at a concurrency both saw (``verdict``).

Pure and clock-free. State is bounded: the open period's values, at most ``max_periods`` closed
periods, and at most ``max_single_stream`` single-stream step rates for the log-wide median.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from statistics import median
from typing import Any

from inferwatch.derive.engine.periods import (
    STEP_RATE_BASIS,
    BusyPeriod,
    Cohort,
    StatsWindow,
    round_or_none,
)
from inferwatch.derive.engine.spec import mean_acceptance_length
from inferwatch.derive.engine.verdict import compare, notable


@dataclass(slots=True)
class _Acc:
    """One concurrency's decode-bound windows of the open period."""

    decode: list[float] = field(default_factory=list)
    steps: list[float] = field(default_factory=list)  # per request
    mals: list[float] = field(default_factory=list)
    accepted: float = 0.0
    drafts: float = 0.0
    windows: int = 0


@dataclass(slots=True)
class _Open:
    start: float
    last: float
    running: list[int] = field(default_factory=list)
    cohorts: dict[int, _Acc] = field(default_factory=dict)
    windows: int = 0


@dataclass(slots=True)
class _Stream:
    engine: str
    dp_rank: str | None
    last_at: float | None = None
    spacings: deque[float] = field(default_factory=lambda: deque(maxlen=16))
    open: _Open | None = None
    closed: deque[BusyPeriod] = field(default_factory=deque)
    single: deque[float] = field(default_factory=deque)


class BusyPeriods:
    """Feed stats windows in time order; ``summary()`` gives periods and verdicts per stream."""

    def __init__(
        self,
        *,
        gap_intervals: float = 3.0,
        default_interval: float = 10.0,
        max_periods: int = 1000,
        max_single_stream: int = 200_000,
    ) -> None:
        self._gap = gap_intervals
        self._default = default_interval
        self._max_periods = max_periods
        self._max_single = max_single_stream
        self._streams: dict[tuple[str, str | None], _Stream] = {}

    def add(self, w: StatsWindow) -> None:
        key = (w.engine, w.dp_rank)
        s = self._streams.get(key)
        if s is None:
            s = self._streams[key] = _Stream(w.engine, w.dp_rank)
        if s.last_at is not None and w.at > s.last_at:
            s.spacings.append(w.at - s.last_at)
        s.last_at = w.at
        if w.running is None or w.running < 1:
            return
        if w.running == 1 and w.steps is not None and not w.prefill_bound:
            if len(s.single) >= self._max_single:
                s.single.popleft()
            s.single.append(w.steps)
        o = s.open
        if o is not None and w.at - o.last > self._gap * self._interval(s):
            self._close(s)
            o = None
        if o is None:
            o = s.open = _Open(w.at, w.at)
        o.last = w.at
        o.windows += 1
        o.running.append(w.running)
        if w.decode is None or w.prefill_bound:
            return
        acc = o.cohorts.get(w.running)
        if acc is None:
            acc = o.cohorts[w.running] = _Acc()
        acc.windows += 1
        acc.decode.append(w.decode)
        if w.steps is not None:
            acc.steps.append(w.steps / w.running)
        if w.mal is not None:
            acc.mals.append(w.mal)
            if w.accepted is not None and w.drafts:
                acc.accepted += w.accepted
                acc.drafts += w.drafts

    def _interval(self, s: _Stream) -> float:
        return median(s.spacings) if s.spacings else self._default

    def _close(self, s: _Stream) -> None:
        if s.open is not None:
            if len(s.closed) >= self._max_periods:
                s.closed.popleft()
            s.closed.append(_period(s, s.open))
            s.open = None

    def periods(self, engine: str, dp_rank: str | None = None) -> list[BusyPeriod]:
        """The stream's periods so far, the open one included."""
        s = self._streams.get((engine, dp_rank))
        if s is None:
            return []
        out = list(s.closed)
        if s.open is not None:
            out.append(_period(s, s.open))
        return out

    def single_stream_step_rate(self, engine: str, dp_rank: str | None = None) -> float | None:
        """The median step rate of every window with exactly one running request."""
        s = self._streams.get((engine, dp_rank))
        return median(s.single) if s is not None and s.single else None

    def summary(self) -> dict[str, Any]:
        """JSON-able: per stream its busy periods, each with its verdict, and one verdict text."""
        streams: list[dict[str, Any]] = []
        changes: list[str] = []
        for (engine, dp_rank), s in self._streams.items():
            periods = self.periods(engine, dp_rank)
            baseline = self.single_stream_step_rate(engine, dp_rank)
            texts = [compare(p, periods[i - 1] if i else None, baseline)
                     for i, p in enumerate(periods)]  # fmt: skip
            name = engine if dp_rank is None else f"{engine} dp_rank {dp_rank}"
            changes += [f"{name}: {t}" for i, t in enumerate(texts) if i and notable(t)]
            rows = [p.to_dict() | {"verdict": t} for p, t in zip(periods, texts, strict=True)]
            streams.append({
                "engine": engine, "dp_rank": dp_rank,
                "interval_seconds": round(self._interval(s), 3),
                "single_stream_step_rate": round_or_none(baseline, 1),
                "step_rate_basis": STEP_RATE_BASIS,
                "busy_periods": rows,
            })  # fmt: skip
        if not streams or not any(st["busy_periods"] for st in streams):
            verdict = "no busy periods (no stats window with a running request)"
        elif changes:
            verdict = "\n".join(changes[-20:])
        else:
            verdict = "no decode difference between busy periods"
        return {"engines": streams, "verdict": verdict}


def _cohort(acc: _Acc) -> Cohort:
    mal = mean_acceptance_length(acc.drafts, accepted=acc.accepted)
    if mal is None and acc.mals:
        mal = median(acc.mals)
    return Cohort(
        windows=acc.windows,
        decode=median(acc.decode) if acc.decode else None,
        mal=mal,
        step_rate=median(acc.steps) if acc.steps else None,
    )


def _period(s: _Stream, o: _Open) -> BusyPeriod:
    cohorts = {running: _cohort(acc) for running, acc in sorted(o.cohorts.items())}
    if cohorts:  # the most common concurrency (the lower on a tie)
        running = max(cohorts, key=lambda r: (cohorts[r].windows, -r))
        head = cohorts[running]
        decode, mal, step_rate = head.decode, head.mal, head.step_rate
        mode: float | None = float(running)
    else:
        decode = mal = step_rate = None
        mode = median(o.running) if o.running else None
    return BusyPeriod(
        engine=s.engine,
        dp_rank=s.dp_rank,
        start=o.start,
        end=o.last,
        windows=o.windows,
        decode=decode,
        mal=mal,
        step_rate=step_rate,
        running=mode,
        cohorts=cohorts,
    )
