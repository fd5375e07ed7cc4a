"""From the daemon's documents (status, alerts, silences, events, query results) to the page's
view model: pure functions, no I/O, no HTML. Every string here is still raw text; the renderer
escapes it.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from inferwatch.export.page.gpus import GpuView, gpu_views
from inferwatch.export.page.i18n import words
from inferwatch.export.page.samples import Curve, Points, Sample, number
from inferwatch.labels import Matcher

SEVERITY_ORDER = {"critical": 0, "warning": 1, "info": 2}
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


@dataclass(frozen=True, slots=True)
class AlertView:
    name: str
    state: str
    severity: str
    since: str
    summary: str
    diagnosis: str
    action: str
    labels: str
    muted_by: tuple[str, ...] = ()  # the active silences (matchers) that mute it


@dataclass(frozen=True, slots=True)
class SilenceView:
    kind: str  # "api" or "file"
    ident: str
    matchers: str
    comment: str
    detail: str  # who and until (API) or the file's path
    active: bool
    mutes: list[str]


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


def stamp(t: float | None) -> str:
    """UTC, to the second: the page is read from anywhere."""
    if t is None:
        return ""
    return dt.datetime.fromtimestamp(t, dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def annotation(annotations: Mapping[str, str], key: str, language: str) -> str:
    """``summary_zh`` (etc.) under ``language: zh`` when the rule carries one."""
    if language != "en":
        localised = annotations.get(f"{key}_{language}")
        if localised:
            return str(localised)
    return str(annotations.get(key, ""))


def alert_views(alerts: Sequence[Mapping[str, Any]], language: str) -> list[AlertView]:
    """Firing first, then pending; by severity, newest first within each."""
    live = [a for a in alerts if a.get("state") in ("firing", "pending")]
    live.sort(
        key=lambda a: (
            a.get("state") != "firing",
            SEVERITY_ORDER.get(str(a.get("labels", {}).get("severity", "")), 9),
            -float(a.get("activeAt") or 0.0),
        )
    )
    out = []
    for a in live:
        labels: Mapping[str, str] = a.get("labels", {})
        notes: Mapping[str, str] = a.get("annotations", {})
        shown = {k: v for k, v in labels.items() if k not in ("alertname", "severity")}
        out.append(
            AlertView(
                name=str(labels.get("alertname", "")),
                state=str(a.get("state")),
                severity=str(labels.get("severity", "")),
                since=stamp(a.get("firedAt") or a.get("activeAt")),
                summary=annotation(notes, "summary", language),
                diagnosis=annotation(notes, "diagnosis", language),
                action=annotation(notes, "action", language),
                labels=", ".join(f"{k}={v}" for k, v in sorted(shown.items())),
            )
        )
    return out


def _matchers(docs: Sequence[Mapping[str, Any]]) -> list[Matcher]:
    ops = {(False, True): "=", (False, False): "!=", (True, True): "=~", (True, False): "!~"}
    return [
        Matcher.of(
            str(m["name"]),
            ops[bool(m.get("isRegex")), bool(m.get("isEqual", True))],
            str(m["value"]),
        )
        for m in docs
    ]


def _muted(
    matchers: list[Matcher], alerts: Sequence[AlertView], raw: Sequence[Mapping[str, Any]]
) -> list[str]:
    names = []
    for view, a in zip(alerts, raw, strict=True):
        labels: Mapping[str, str] = a.get("labels", {})
        if all(m.matches(str(labels.get(m.name, ""))) for m in matchers):
            names.append(f"{view.name} {view.labels}".strip())
    return names


def _matcher_text(docs: Sequence[Mapping[str, Any]]) -> str:
    ops = {(False, True): "=", (False, False): "!=", (True, True): "=~", (True, False): "!~"}
    text = ", ".join(
        f'{m["name"]}{ops[bool(m.get("isRegex")), bool(m.get("isEqual", True))]}"{m["value"]}"'
        for m in docs
    )
    return "{" + text + "}"


def silence_views(inputs: PageInputs) -> list[SilenceView]:
    """Active and pending API silences, then every configured flag file; each with the current
    alerts it selects."""
    live = sorted(
        (a for a in inputs.alerts if a.get("state") in ("firing", "pending")),
        key=lambda a: str(a.get("labels", {}).get("alertname", "")),
    )
    shown = [alert_views([a], inputs.language)[0] for a in live]
    out = []
    for s in inputs.silences:
        state = str(s.get("status", {}).get("state", ""))
        if state == "expired":
            continue
        docs = s.get("matchers", [])
        out.append(
            SilenceView(
                kind="api",
                ident=str(s.get("id", "")),
                matchers=_matcher_text(docs),
                comment=str(s.get("comment", "")),
                detail=f"{s.get('createdBy', '')} · {stamp(s.get('endsAt'))}",
                active=state == "active",
                mutes=_muted(_matchers(docs), shown, live),
            )
        )
    notify = inputs.status.get("notify") or {}
    for f in notify.get("silence_files", []):
        docs = f.get("matchers", [])
        out.append(
            SilenceView(
                kind="file",
                ident=str(f.get("id", "")),
                matchers=_matcher_text(docs),
                comment=str(f.get("comment", "")),
                detail=str(f.get("path", "")),
                active=bool(f.get("active")),
                mutes=_muted(_matchers(docs), shown, live) if f.get("active") else [],
            )
        )
    return out


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


def event_views(events: Sequence[Mapping[str, Any]]) -> tuple[list[EventView], list[EventView]]:
    """Fault incidents, and every other event (newest first, as the event log gives them)."""
    incidents: list[EventView] = []
    others: list[EventView] = []
    for e in events:
        view = EventView(
            at=stamp(e.get("at")),
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


def _with_silences(alerts: list[AlertView], silences: list[SilenceView]) -> list[AlertView]:
    out = []
    for a in alerts:
        shown = f"{a.name} {a.labels}".strip()
        muted = tuple(s.matchers for s in silences if s.active and shown in s.mutes)
        out.append(replace(a, muted_by=muted) if muted else a)
    return out


def build_view(inputs: PageInputs) -> PageView:
    w = words(inputs.language)
    status = inputs.status
    notify = status.get("notify") or {}
    incidents, events = event_views(inputs.events)
    silences = silence_views(inputs)
    problems = [str(p) for p in status.get("problems") or []]
    problems += [str(p) for p in (status.get("rules") or {}).get("problems") or []]
    return PageView(
        language=inputs.language if inputs.language in ("en", "zh") else "en",
        words=w,
        updated=stamp(inputs.now),
        alerts=_with_silences(alert_views(inputs.alerts, inputs.language), silences),
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
    )


__all__ = ["Curve", "PageInputs", "PageView", "Sample", "build_view", "stamp"]
