"""What a digest says, computed from the series store and the event log rows (no I/O, no clock).

The window is ``[end - window, end]``; the one before it, ``[end - 2 window, end - window)``, is
what "vs the previous day" compares with. Decode, MAL and step-rate medians count only samples
taken while the engine had a running request: an idle engine logs 0 t/s, which would drag the
median down on a quiet day (reference/host.md: decode ~ step rate x MAL, so the step rate is the
number that moves with the stack). Busy hours are clock hours, in the digest's zone, in which some
engine had at least one running request. Missing data is an empty field, never an exception.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, tzinfo
from statistics import median
from typing import Any

from inferwatch.alerts.model import AlertTransition
from inferwatch.derive.engine import names as n
from inferwatch.event import Event
from inferwatch.labels import label_value
from inferwatch.store.series import Series
from inferwatch.store.tsdb import SeriesStore

METRICS = (n.DECODE, n.MAL, n.STEPS, n.RUNNING)
"""The series a digest reads; the daemon keeps two windows of them."""
INCIDENT = "fault_incident"
CRASH = "engine_crash"
ALERT = "alert"
DOWNLOAD_PREFIX = "download"
EVENT_TYPES = (INCIDENT, CRASH, ALERT)
RUNNING_FRESH_S = 300.0
"""A running-request reading older than this says nothing about a later sample."""

Counts = tuple[tuple[str, int], ...]


@dataclass(frozen=True, slots=True)
class Change:
    current: float | None
    previous: float | None

    @property
    def percent(self) -> float | None:
        if self.current is None or self.previous is None or self.previous == 0:
            return None
        return (self.current - self.previous) / abs(self.previous) * 100.0


@dataclass(frozen=True, slots=True)
class EngineDay:
    """Busy-time medians of one engine (all its DP ranks together)."""

    engine: str
    decode: Change
    mal: Change
    steps: Change


@dataclass(frozen=True, slots=True)
class Summary:
    start: float
    end: float
    window: float
    has_running: bool
    """Whether any engine reported running requests at all (else busy hours are unknown)."""
    busy_hours: tuple[float, ...]
    """Start of each busy clock hour (Unix seconds), ascending."""
    busy_hours_previous: int | None
    engines: tuple[EngineDay, ...]
    incidents: Counts
    crashes: Counts
    downloads: Counts
    fired: Counts
    resolved: Counts


def summarize(
    store: SeriesStore,
    events: Iterable[Mapping[str, Any]],
    *,
    end: float,
    window: float,
    tz: tzinfo,
) -> Summary:
    start = end - window
    rows = [e for e in events if _number(e.get("at")) is not None]
    rows = [e for e in rows if start <= float(e["at"]) <= end]
    running = list(store.family(n.RUNNING))
    busy = _busy_hours(running, start, end, tz, previous=False)
    before = _busy_hours(running, start - window, start, tz, previous=True)
    has_before = any(len(s.window(start - window, start - 1e-6)[0]) for s in running)
    return Summary(
        start=start,
        end=end,
        window=window,
        has_running=any(len(s.window(start, end)[0]) for s in running),
        busy_hours=busy,
        busy_hours_previous=len(before) if has_before else None,
        engines=_engines(store, start, end, window),
        incidents=_tally(_classification(e) for e in rows if e.get("type") == INCIDENT),
        crashes=_tally(_crash_key(e) for e in rows if e.get("type") == CRASH),
        downloads=_tally(_download_key(e) for e in rows if _is_download(e)),
        fired=_tally(_alertname(e) for e in rows if _alert_state(e) == "firing"),
        resolved=_tally(_alertname(e) for e in rows if _alert_state(e) == "resolved"),
    )


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _hour_start(t: float, tz: tzinfo) -> float:
    local = datetime.fromtimestamp(t, tz)
    return local.replace(minute=0, second=0, microsecond=0).timestamp()


def _busy_hours(
    running: Sequence[Series], start: float, end: float, tz: tzinfo, *, previous: bool
) -> tuple[float, ...]:
    hours: set[float] = set()
    for s in running:
        ts, vs = s.window(start, end)
        for t, v in zip(ts, vs, strict=True):
            if previous and t >= end:
                continue
            if not math.isnan(v) and v >= 1:
                hours.add(_hour_start(t, tz))
    return tuple(sorted(hours))


def _engines(store: SeriesStore, start: float, end: float, window: float) -> tuple[EngineDay, ...]:
    names = sorted(
        {
            label_value(s.labels, "engine")
            for name in (n.DECODE, n.MAL, n.STEPS)
            for s in store.family(name)
            if len(s.window(start - window, end)[0])
        }
    )
    out: list[EngineDay] = []
    for engine in names:
        changes = [
            Change(
                _median(store, name, engine, start, end, end_open=False),
                _median(store, name, engine, start - window, start, end_open=True),
            )
            for name in (n.DECODE, n.MAL, n.STEPS)
        ]
        if any(c.current is not None or c.previous is not None for c in changes):
            out.append(EngineDay(engine, *changes))
    return tuple(out)


def _median(
    store: SeriesStore, name: str, engine: str, start: float, end: float, *, end_open: bool
) -> float | None:
    values: list[float] = []
    for s in store.family(name):
        if label_value(s.labels, "engine") != engine:
            continue
        running = store.get(n.RUNNING, s.labels)
        ts, vs = s.window(start, end)
        for t, v in zip(ts, vs, strict=True):
            if (end_open and t >= end) or not math.isfinite(v):
                continue
            if _busy_at(running, t, v):
                values.append(v)
    return median(values) if values else None


def _busy_at(running: Series | None, t: float, value: float) -> bool:
    """Whether a sample was taken while requests ran; without a running series, a zero rate
    is taken for an idle engine."""
    if running is None:
        return value > 0
    last = running.at_or_before(t)
    if last is None or t - last[0] > RUNNING_FRESH_S or math.isnan(last[1]):
        return False
    return last[1] >= 1


def _tally(keys: Iterable[str]) -> Counts:
    counts = Counter(keys)
    return tuple(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def _field(event: Mapping[str, Any], name: str) -> str:
    """A label of the event, else a detail of that name, else empty."""
    labels = event.get("labels")
    details = event.get("details")
    for source in (labels, details):
        if isinstance(source, Mapping):
            value = source.get(name)
            if isinstance(value, str | int | float) and not isinstance(value, bool):
                return str(value)
    return ""


def _classification(event: Mapping[str, Any]) -> str:
    return _field(event, "classification") or "unclassified"


def _crash_key(event: Mapping[str, Any]) -> str:
    engine = _field(event, "engine")
    signature = _field(event, "signature") or "unknown"
    return f"{engine} {signature}" if engine else signature


def _is_download(event: Mapping[str, Any]) -> bool:
    return str(event.get("type", "")).startswith(DOWNLOAD_PREFIX)


def _download_key(event: Mapping[str, Any]) -> str:
    kind = str(event.get("type", ""))
    name = _field(event, "name")
    return f"{name} {kind}" if name else kind


def _alert_state(event: Mapping[str, Any]) -> str:
    return _field(event, "state") if event.get("type") == ALERT else ""


def _alertname(event: Mapping[str, Any]) -> str:
    return _field(event, "alertname") or "alert"


def alert_events(transitions: Iterable[AlertTransition]) -> list[Event]:
    """Fired and resolved transitions as event-log rows (type ``alert``), the record a digest
    counts; the key makes a transition seen twice (a restart) one row."""
    out: list[Event] = []
    for tr in transitions:
        if not (tr.fired or tr.resolved):
            continue
        state = tr.to_state.value
        alert = tr.alert
        labels = {"alertname": alert.name, "state": state}
        severity = alert.label("severity")
        if severity:
            labels["severity"] = severity
        out.append(
            Event(
                type=ALERT,
                at=tr.at,
                source="rules",
                key=f"alert:{alert.fingerprint}:{state}:{round(tr.at * 1000)}",
                labels=labels,
                details={"labels": dict(alert.labels), "summary": alert.annotation("summary")},
            )
        )
    return out
