"""``inferwatch replay … --report F.html``: the status page's views for a replayed log, in one
self-contained file an owner can attach to a bug report (no script, nothing loaded).

Decode, MAL and step rate over the whole replay with the busy periods shaded, the verdict, each
alert that fired (with diagnosis and action, and when it resolved), incidents and events.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from inferwatch.export.page.render import esc, render_document
from inferwatch.export.page.samples import Curve, Points, since_boot
from inferwatch.export.page.view import (
    ENGINE_GAUGES,
    SPARKS,
    PageInputs,
    PageView,
    annotation,
    build_view,
    stamp,
)

CHART_W, CHART_H = 600, 90
MAX_EVENTS = 500  # the newest; incidents are always kept


@dataclass(slots=True)
class ReportInputs:
    title: str
    files: Sequence[str]
    language: str = "en"
    first: float | None = None
    last: float | None = None
    events: Sequence[Mapping[str, Any]] = ()
    alerts: Sequence[Mapping[str, Any]] = ()  # replay's alert lines, each with "at_s"
    summary: Mapping[str, Any] = field(default_factory=dict)
    curves: Sequence[Curve] = ()
    boot_relative: bool = False  # times are seconds since boot (no wall clock in the logs)

    def time_text(self, t: float | None) -> str:
        return since_boot(t) if self.boot_relative else stamp(t)


def chart(
    points: Points, t0: float, t1: float, busy: Sequence[tuple[float, float]], label: str
) -> str:
    """A line over [t0, t1] with the busy periods shaded behind it."""
    span_t = (t1 - t0) or 1.0
    finite = [(t, v) for t, v in points if math.isfinite(v)]
    rects = "".join(
        f'<rect class="busy" x="{(s - t0) / span_t * CHART_W:.1f}" y="0" '
        f'width="{max(1.0, (e - s) / span_t * CHART_W):.1f}" height="{CHART_H}"/>'
        for s, e in busy
    )
    line = ""
    if finite:
        hi = max(v for _, v in finite) or 1.0
        scale = (CHART_H - 6) / hi
        coords = " ".join(
            f"{(t - t0) / span_t * CHART_W:.1f},{CHART_H - 2 - max(v, 0.0) * scale:.1f}"
            for t, v in finite
        )
        line = f'<polyline fill="none" stroke="currentColor" stroke-width="1.5" points="{coords}"/>'
        label = f"{label} (max {hi:.2f})"
    return (
        f'<figure><figcaption>{esc(label)}</figcaption><svg class="chart" role="img" '
        f'aria-label="{esc(label)}" viewBox="0 0 {CHART_W} {CHART_H}" preserveAspectRatio="none">'
        f"{rects}{line}</svg></figure>"
    )


def _busy(summary: Mapping[str, Any], engine: str) -> list[tuple[float, float]]:
    out = []
    for stream in summary.get("engines") or []:
        if stream.get("engine") == engine:
            for p in stream.get("busy_periods") or []:
                if isinstance(p.get("start"), int | float) and isinstance(
                    p.get("end"), int | float
                ):
                    out.append((float(p["start"]), float(p["end"])))
    return out


def _engines(inputs: ReportInputs, view: PageView) -> str:
    w = view.words
    names = {v: k for k, v in ENGINE_GAUGES.items()}
    times = [t for c in inputs.curves for t, _ in c.points[:1] + c.points[-1:]]
    t0, t1 = (min(times), max(times)) if times else (0.0, 0.0)
    blocks: dict[str, list[str]] = {}
    for c in sorted(
        inputs.curves, key=lambda c: (c.metric.get("engine", ""), c.metric.get("__name__", ""))
    ):
        key = names.get(c.metric.get("__name__", ""))
        engine = c.metric.get("engine", "")
        if key in SPARKS and engine:
            busy = _busy(inputs.summary, engine)
            blocks.setdefault(engine, []).append(chart(c.points, t0, t1, busy, w[str(key)]))
    if not blocks:
        empty = f'<p class="empty">{esc(w["no_engines"])}</p>'
        return f'<section id="engines"><h2>{esc(w["engines"])}</h2>{empty}</section>'
    span = f'<p class="meta">{esc(inputs.time_text(t0))} – {esc(inputs.time_text(t1))}</p>'
    body = "".join(
        f'<article class="engine"><h3>{esc(name)}</h3>{span}{"".join(charts)}</article>'
        for name, charts in sorted(blocks.items())
    )
    return f'<section id="engines"><h2>{esc(w["engines"])}</h2>{body}</section>'


def _verdict(inputs: ReportInputs, view: PageView) -> str:
    w = view.words
    verdict = str(inputs.summary.get("verdict") or "")
    periods = []
    when = inputs.time_text
    for stream in inputs.summary.get("engines") or []:
        for p in stream.get("busy_periods") or []:
            periods.append(
                f"<tr><td>{esc(stream.get('engine', ''))}</td><td>{esc(when(p.get('start')))}</td>"
                f"<td>{esc(when(p.get('end')))}</td><td>{esc(p.get('decode'))}</td>"
                f"<td>{esc(p.get('mal'))}</td><td>{esc(p.get('step_rate'))}</td>"
                f"<td>{esc(p.get('verdict', ''))}</td></tr>"
            )
    head = (
        f"<tr><th></th><th>start</th><th>end</th><th>{esc(w['decode'])}</th>"
        f"<th>{esc(w['mal'])}</th><th>{esc(w['step_rate'])}</th><th>{esc(w['verdict'])}</th></tr>"
    )
    table = f'<div class="scroll"><table>{head}{"".join(periods)}</table></div>' if periods else ""
    files = "".join(f"<li><code>{esc(f)}</code></li>" for f in inputs.files)
    span = (
        f"{inputs.time_text(inputs.first)} – {inputs.time_text(inputs.last)}"
        if inputs.first is not None
        else ""
    )
    return (
        f'<section id="summary"><h2>{esc(w["summary"])}</h2><ul>{files}</ul>'
        f'<p class="meta">{esc(span)}</p><p class="verdict"><b>{esc(w["verdict"])}:</b> '
        f"{esc(verdict)}</p><h3>{esc(w['busy'])}</h3>{table}</section>"
    )


def _alerts(inputs: ReportInputs, view: PageView) -> str:
    """Each alert that fired, once, with when it fired and resolved."""
    w = view.words
    seen: dict[tuple[tuple[str, str], ...], dict[str, Any]] = {}
    for doc in inputs.alerts:
        key = tuple(sorted((doc.get("labels") or {}).items()))
        entry = seen.setdefault(key, {"doc": doc, "fired": None, "resolved": None})
        if doc.get("state") == "firing" and entry["fired"] is None:
            entry["fired"], entry["doc"] = doc.get("at_s"), doc
        elif doc.get("state") == "resolved":
            entry["resolved"] = doc.get("at_s")
    cards = []
    for entry in seen.values():
        doc, notes = entry["doc"], entry["doc"].get("annotations") or {}
        labels = doc.get("labels") or {}
        shown = ", ".join(
            f"{k}={v}" for k, v in sorted(labels.items()) if k not in ("alertname", "severity")
        )
        state = "resolved" if entry["resolved"] is not None else "firing"
        extra = "".join(
            f'<p class="note"><b>{esc(w[k])}:</b> {esc(annotation(notes, k, inputs.language))}</p>'
            for k in ("diagnosis", "action")
            if annotation(notes, k, inputs.language)
        )
        when = f"{w['since']} {inputs.time_text(entry['fired'])}"
        if entry["resolved"] is not None:
            when += f" · {w['resolved']} {inputs.time_text(entry['resolved'])}"
        cards.append(
            f'<article class="alert {state} sev-{esc(labels.get("severity", ""))}">'
            f'<h3><span class="state">{esc(w[state])}</span> {esc(labels.get("alertname", ""))}'
            f" <small>{esc(labels.get('severity', ''))}</small></h3>"
            f'<p class="summary">{esc(annotation(notes, "summary", inputs.language))}</p>'
            f'<p class="meta">{esc(shown)} · {esc(when)}</p>{extra}</article>'
        )
    body = "".join(cards) or f'<p class="empty">{esc(w["no_alerts"])}</p>'
    return f'<section id="alerts"><h2>{esc(w["alerts"])}</h2>{body}</section>'


def _events(ident: str, title: str, empty: str, rows: Sequence[Any]) -> str:
    body = "".join(
        f"<tr><td>{esc(e.at)}</td><td>{esc(e.type)}</td><td>{esc(e.text)}"
        f"<br><small>{esc(e.source)}</small></td></tr>"
        for e in rows
    )
    inner = (
        f'<div class="scroll"><table>{body}</table></div>'
        if rows
        else f'<p class="empty">{esc(empty)}</p>'
    )
    return f'<section id="{ident}"><h2>{esc(title)}</h2>{inner}</section>'


def render_report(inputs: ReportInputs) -> str:
    events = sorted(inputs.events, key=lambda e: -float(e.get("at") or 0.0))
    incidents = [e for e in events if e.get("type") == "fault_incident"]
    others = [e for e in events if e.get("type") != "fault_incident"][:MAX_EVENTS]
    events = incidents + others
    view = build_view(
        PageInputs(
            now=inputs.last or 0.0,
            language=inputs.language,
            events=events,
            time_text=inputs.time_text,
        )
    )
    w = view.words
    main = "".join(
        [
            _verdict(inputs, view),
            _alerts(inputs, view),
            _engines(inputs, view),
            _events("incidents", w["incidents"], w["no_incidents"], view.incidents),
            _events("events", w["events"], w["no_events"], view.events),
        ]
    )
    return render_document(view, title=inputs.title or w["report_title"], main=main, refresh=False)


__all__ = ["ReportInputs", "chart", "render_report"]
