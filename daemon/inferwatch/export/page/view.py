"""From the daemon's documents (status, alerts, silences, events, query results) to the page's
view model: pure functions, no I/O, no HTML. Every string here is still raw text; the renderer
escapes it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from inferwatch.export.page.alerts import AlertView, alert_views, annotation
from inferwatch.export.page.gpus import GpuView, gpu_views
from inferwatch.export.page.i18n import words
from inferwatch.export.page.probes import ProbeView, probe_views
from inferwatch.export.page.samples import Curve, Points, Sample, TimeText, number, stamp
from inferwatch.export.page.silences import SilenceView, silence_views, with_silences

ENGINE_GAUGES = {
    "decode": "inferwatch_engine_decode_tokens_per_second",
    "mal": "inferwatch_engine_spec_acceptance_length",
    "step_rate": "inferwatch_engine_steps_per_second",
    "running": "inferwatch_engine_requests_running",
    "waiting": "inferwatch_engine_requests_waiting",
    "kv": "inferwatch_engine_kv_cache_usage_ratio",
}
SPARKS = ("decode", "mal", "step_rate")


@dataclass(slots=True)
class PageInputs:
    now: float
    language: str = "en"
    status: Mapping[str, Any] = field(default_factory=dict)
    alerts: Sequence[Mapping[str, Any]] = ()
    silences: Sequence[Mapping[str, Any]] = ()
    events: Sequence[Mapping[str, Any]] = ()
    samples: Sequence[Sample] = ()
    curves: Sequence[Curve] = ()
    links: Sequence[tuple[str, str]] = ()
    time_text: TimeText = stamp  # how event times read (a boot-relative replay: since boot)


@dataclass(frozen=True, slots=True)
class EngineView:
    name: str
    values: dict[str, str]
    sparks: dict[str, Points]


@dataclass(frozen=True, slots=True)
class EventView:
    at: str
    type: str
    source: str
    text: str


@dataclass(frozen=True, slots=True)
class SourceView:
    name: str
    state: str
    reason: str
    ok: bool


@dataclass(frozen=True, slots=True)
class AttemptView:
    integration: str
    outcome: str
    at: str
    reason: str
    ok: bool


@dataclass(frozen=True, slots=True)
class PageView:
    language: str
    words: dict[str, str]
    updated: str
    alerts: list[AlertView]
    silences: list[SilenceView]
    engines: list[EngineView]
    gpus: list[GpuView]
    incidents: list[EventView]
    events: list[EventView]
    sources: list[SourceView]
    pending: int
    oldest: str
    attempts: list[AttemptView]
    problems: list[str]
    links: list[tuple[str, str]]
    probes: list[ProbeView] = field(default_factory=list)


def _engine_key(metric: Mapping[str, str]) -> str:
    name = metric.get("engine", "")
    rank = metric.get("dp_rank")
    return f"{name} dp{rank}" if rank and rank != "0" else name


def engine_views(inputs: PageInputs) -> list[EngineView]:
    by_metric = {v: k for k, v in ENGINE_GAUGES.items()}
    values: dict[str, dict[str, str]] = {}
    for s in inputs.samples:
        key = by_metric.get(s.metric.get("__name__", ""))
        if key is None or "engine" not in s.metric:
            continue
        cell = values.setdefault(_engine_key(s.metric), {})
        if key == "kv":
            cell[key] = f"{number(100 * s.value)}%"
        elif key in ("running", "waiting"):
            cell[key] = number(s.value, 0)
        else:
            cell[key] = number(s.value, 2 if key == "mal" else 1)
    sparks: dict[str, dict[str, Points]] = {}
    for c in inputs.curves:
        key = by_metric.get(c.metric.get("__name__", ""))
        if key in SPARKS and "engine" in c.metric:
            sparks.setdefault(_engine_key(c.metric), {})[str(key)] = c.points
    names = sorted(set(values) | set(sparks))
    return [EngineView(n, values.get(n, {}), sparks.get(n, {})) for n in names]


def _event_text(e: Mapping[str, Any]) -> str:
    details = e.get("details") or {}
    labels = e.get("labels") or {}
    parts = [f"{k}={v}" for k, v in sorted(labels.items())]
    for key in ("classification", "gpus", "xid", "signature", "name", "message", "reason"):
        if key in details and key not in labels:
            value = details[key]
            text = json.dumps(value, default=str) if isinstance(value, dict | list) else value
            parts.append(f"{key}={text}")
    return " ".join(parts)


def event_views(
    events: Sequence[Mapping[str, Any]], time_text: TimeText = stamp
) -> tuple[list[EventView], list[EventView]]:
    """Fault incidents, and every other event (newest first, as the event log gives them)."""
    incidents: list[EventView] = []
    others: list[EventView] = []
    for e in events:
        view = EventView(
            at=time_text(e.get("at")),
            type=str(e.get("type", "")),
            source=f"{e.get('source', '')}:{e.get('line')}"
            if e.get("line")
            else str(e.get("source", "")),
            text=_event_text(e),
        )
        (incidents if view.type == "fault_incident" else others).append(view)
    return incidents, others


def source_views(status: Mapping[str, Any], w: Mapping[str, str]) -> list[SourceView]:
    out = [
        SourceView(
            name=str(name),
            state=str(h.get("state", "")),
            reason=str(h.get("reason") or h.get("last_error") or ""),
            ok=h.get("state") == "up",
        )
        for name, h in sorted((status.get("sources") or {}).items())
    ]
    out += [SourceView(str(d), w["disabled"], "", True) for d in status.get("disabled") or []]
    return out


def attempt_views(notify: Mapping[str, Any]) -> list[AttemptView]:
    return [
        AttemptView(
            integration=str(name),
            outcome=str(a.get("outcome", "")),
            at=stamp(a.get("at")),
            reason=str(a.get("reason") or ""),
            ok=a.get("outcome") == "ok",
        )
        for name, a in sorted((notify.get("last_attempts") or {}).items())
    ]


def build_view(inputs: PageInputs) -> PageView:
    w = words(inputs.language)
    status = inputs.status
    notify = status.get("notify") or {}
    incidents, events = event_views(inputs.events, inputs.time_text)
    silences = silence_views(inputs.alerts, inputs.silences, notify, inputs.language)
    problems = [str(p) for p in status.get("problems") or []]
    problems += [str(p) for p in (status.get("rules") or {}).get("problems") or []]
    return PageView(
        language=inputs.language if inputs.language in ("en", "zh") else "en",
        words=w,
        updated=stamp(inputs.now),
        alerts=with_silences(alert_views(inputs.alerts, inputs.language), silences),
        silences=silences,
        engines=engine_views(inputs),
        gpus=gpu_views(inputs.samples),
        incidents=incidents,
        events=events,
        sources=source_views(status, w),
        pending=int(notify.get("outbox_pending") or 0),
        oldest=stamp(notify.get("outbox_oldest_pending_at")),
        attempts=attempt_views(notify),
        problems=problems,
        links=list(inputs.links),
        probes=probe_views(status),
    )


__all__ = [
    "AlertView",
    "Curve",
    "PageInputs",
    "PageView",
    "Sample",
    "SilenceView",
    "annotation",
    "build_view",
    "stamp",
]
