"""The view model as one self-contained HTML document: inline CSS, inline SVG sparklines, a
few lines of script to refresh the live page. Every text taken from a document goes through
:func:`esc`; nothing is fetched from anywhere but the daemon itself.
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable, Sequence

from inferwatch.export.page.assets import CSS, REFRESH_JS
from inferwatch.export.page.gpus import GpuView
from inferwatch.export.page.samples import Points
from inferwatch.export.page.view import SPARKS, EngineView, EventView, PageView

SPARK_W, SPARK_H = 120, 28


def esc(text: object) -> str:
    return html.escape(str(text), quote=True)


def sparkline(points: Points, label: str = "") -> str:
    """A polyline scaled into a small box; the title gives the range of values."""
    finite = [(t, v) for t, v in points if math.isfinite(v)]
    if not finite:
        return ""
    t0, t1 = finite[0][0], finite[-1][0]
    lo = min(v for _, v in finite)
    hi = max(v for _, v in finite)
    span_t = (t1 - t0) or 1.0
    span_v = (hi - lo) or 1.0
    coords = " ".join(
        f"{(t - t0) / span_t * SPARK_W:.1f},{SPARK_H - 2 - (v - lo) / span_v * (SPARK_H - 4):.1f}"
        for t, v in finite
    )
    title = esc(f"{label} {lo:.2f} – {hi:.2f}".strip())
    return (
        f'<svg class="spark" viewBox="0 0 {SPARK_W} {SPARK_H}" role="img" aria-label="{title}">'
        f"<title>{title}</title>"
        f'<polyline fill="none" stroke="currentColor" stroke-width="1.5" points="{coords}"/></svg>'
    )


def _section(ident: str, title: str, body: str, count: int | None = None) -> str:
    badge = f' <span class="count">{count}</span>' if count else ""
    return f'<section id="{ident}"><h2>{esc(title)}{badge}</h2>{body}</section>'


def _empty(text: str) -> str:
    return f'<p class="empty">{esc(text)}</p>'


def _alerts(view: PageView) -> str:
    w = view.words
    if not view.alerts:
        return _section("alerts", w["alerts"], _empty(w["no_alerts"]))
    cards = []
    for a in view.alerts:
        notes = "".join(
            f'<p class="note"><b>{esc(w[key])}:</b> {esc(text)}</p>'
            for key, text in (("diagnosis", a.diagnosis), ("action", a.action))
            if text
        )
        if a.muted_by:
            notes += f'<p class="muted">{esc(w["muted_by"])}: {esc("; ".join(a.muted_by))}</p>'
        cards.append(
            f'<article class="alert {esc(a.state)} sev-{esc(a.severity)}">'
            f'<h3><span class="state">{esc(w.get(a.state, a.state))}</span> {esc(a.name)}'
            f" <small>{esc(a.severity)}</small></h3>"
            f'<p class="summary">{esc(a.summary)}</p>'
            f'<p class="meta">{esc(a.labels)} · {esc(w["since"])} {esc(a.since)}</p>{notes}'
            "</article>"
        )
    return _section("alerts", w["alerts"], "".join(cards), len(view.alerts))


def _silences(view: PageView) -> str:
    w = view.words
    if not view.silences:
        return _section("silences", w["silences"], _empty(w["no_silences"]))
    rows = []
    for s in view.silences:
        kind = w["silence_file"] if s.kind == "file" else "API"
        mutes = "; ".join(s.mutes) or w["nothing_muted"]
        rows.append(
            f'<tr class="{"on" if s.active else "off"}"><td>{esc(kind)}</td>'
            f"<td><code>{esc(s.matchers)}</code><br><small>{esc(s.comment)}</small></td>"
            f"<td>{esc(s.detail)}</td><td>{esc(w['mutes'])}: {esc(mutes)}</td></tr>"
        )
    return _section("silences", w["silences"], _table(rows), len(view.silences))


def _engine(e: EngineView, view: PageView) -> str:
    w = view.words
    cells = []
    for key in ("decode", "mal", "step_rate", "running", "waiting", "kv"):
        spark = sparkline(e.sparks.get(key, []), w[key]) if key in SPARKS else ""
        cells.append(
            f'<div class="metric" data-metric="{key}"><span class="k">{esc(w[key])}</span>'
            f'<span class="v">{esc(e.values.get(key, "–"))}</span>{spark}</div>'
        )
    grid = f'<div class="grid">{"".join(cells)}</div>'
    return f'<article class="engine"><h3>{esc(e.name)}</h3>{grid}</article>'


def _engines(view: PageView) -> str:
    w = view.words
    if not view.engines:
        return _section("engines", w["engines"], _empty(w["no_engines"]))
    return _section("engines", w["engines"], "".join(_engine(e, view) for e in view.engines))


def _gpu(g: GpuView, view: PageView) -> str:
    w = view.words
    rows = [
        f"<tr{' class=warn' if r.warn else ''}><th>{esc(w.get(r.label, r.label))}</th>"
        f"<td>{esc(r.value)}</td></tr>"
        for r in g.rows
    ]
    if g.holders:
        rows.append(f'<tr><th colspan="2">{esc(w["vram"])}</th></tr>')
        rows += [
            f"<tr{' class=warn' if r.warn else ''}><td>{esc(r.label)}</td>"
            f"<td>{esc(r.value)}</td></tr>"
            for r in g.holders
        ]
    return f'<article class="gpu"><h3>{esc(g.title)}</h3><table>{"".join(rows)}</table></article>'


def _gpus(view: PageView) -> str:
    w = view.words
    if not view.gpus:
        return _section("gpus", w["gpus"], _empty(w["no_gpus"]))
    return _section(
        "gpus",
        w["gpus"],
        '<div class="cards">' + "".join(_gpu(g, view) for g in view.gpus) + "</div>",
    )


def _events(ident: str, title: str, empty: str, events: Sequence[EventView]) -> str:
    if not events:
        return _section(ident, title, _empty(empty))
    rows = [
        f"<tr><td>{esc(e.at)}</td><td>{esc(e.type)}</td><td>{esc(e.text)}"
        f"<br><small>{esc(e.source)}</small></td></tr>"
        for e in events
    ]
    return _section(ident, title, _table(rows), len(events))


def _probes(view: PageView) -> str:
    """Services and downloads: state, since when, and what is wrong or how far along."""
    w = view.words
    if not view.probes:
        return _section("downloads", w["downloads"], _empty(w["no_downloads"]))
    rows = [
        f'<tr class="{"ok" if p.ok else "bad"}"><td>{esc(p.kind)}</td><td>{esc(p.name)}</td>'
        f"<td>{esc(p.state)}</td><td>{esc(p.detail)}</td><td>{esc(p.since)}</td></tr>"
        for p in view.probes
    ]
    return _section("downloads", w["downloads"], _table(rows), len(view.probes))


def _sources(view: PageView) -> str:
    w = view.words
    rows = [
        f'<tr class="{"ok" if s.ok else "bad"}"><td>{esc(s.name)}</td><td>{esc(s.state)}</td>'
        f"<td>{esc(s.reason)}</td></tr>"
        for s in view.sources
    ]
    return _section("sources", w["sources"], _table(rows) if rows else "")


def _outbox(view: PageView) -> str:
    w = view.words
    head = f'<p>{esc(w["pending_messages"])}: <b class="pending">{view.pending}</b>'
    if view.oldest:
        head += f" · {esc(w['oldest'])}: {esc(view.oldest)}"
    head += "</p>"
    rows = [
        f'<tr class="{"ok" if a.ok else "bad"}"><td>{esc(a.integration)}</td>'
        f"<td>{esc(a.outcome)}</td>"
        f"<td>{esc(a.at)}</td><td>{esc(a.reason)}</td></tr>"
        for a in view.attempts
    ]
    return _section(
        "outbox", w["outbox"], head + (_table(rows) if rows else _empty(w["no_attempts"]))
    )


def _problems(view: PageView) -> str:
    if not view.problems:
        return ""
    items = "".join(f"<li>{esc(p)}</li>" for p in view.problems)
    return _section("problems", view.words["problems"], f'<ul class="problems">{items}</ul>')


def _table(rows: Iterable[str]) -> str:
    return f'<div class="scroll"><table>{"".join(rows)}</table></div>'


def render_main(view: PageView, extra: str = "") -> str:
    """The part the live page refreshes: every section, most urgent first."""
    w = view.words
    return "".join(
        [
            f'<p class="updated">{esc(w["updated"])} {esc(view.updated)}</p>',
            _problems(view),
            _alerts(view),
            extra,
            _silences(view),
            _engines(view),
            _gpus(view),
            _events("incidents", w["incidents"], w["no_incidents"], view.incidents),
            _events("events", w["events"], w["no_events"], view.events),
            _probes(view),
            _sources(view),
            _outbox(view),
        ]
    )


def render_document(view: PageView, *, title: str, main: str, refresh: bool) -> str:
    """The whole page; ``refresh`` adds the script that reloads ``main`` every few seconds."""
    lang = "zh-CN" if view.language == "zh" else "en"
    links = " ".join(
        f'<a href="{esc(url)}" rel="noopener">{esc(label)}</a>' for label, url in view.links
    )
    script = f"<script>{REFRESH_JS}</script>" if refresh else ""
    return (
        f'<!doctype html><html lang="{lang}"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title><style>{CSS}</style></head><body>"
        f"<header><h1>{esc(title)}</h1><nav>{links}</nav></header>"
        f'<main id="main">{main}</main>{script}</body></html>'
    )


__all__ = ["esc", "render_document", "render_main", "sparkline"]
