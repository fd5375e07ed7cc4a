"""One phone-sized message from a v4 payload, shared by every chat channel.

A phone shows a few lines in a banner, so each alert becomes a short block: a title with the
severity and the alert name, the host, then summary, diagnosis, action, the identifying numbers
(engine, GPU, Xid...) and when it started (or, resolved, how long it lasted). Providers count
limits in UTF-8 bytes (WeCom 4096 B; a Chinese character is 3 B) or in characters (Telegram), so
blocks are added while they fit, the rest is counted as "+N more", and a cut never splits a code
point and is always marked (notify.md §3).
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from typing import Any, Literal

from inferwatch.config.models import Config

Language = Literal["en", "zh"]
Style = Literal["text", "markdown", "html"]
Unit = Literal["bytes", "chars"]

RANK = {"critical": 3, "warning": 2, "info": 1}
KEY_LABELS = ("engine", "gpu", "pci_bus_id", "xid", "dp_rank", "signature", "job")
"""Labels worth showing on a phone: they say *which* engine/GPU without opening a dashboard."""

TEXTS: dict[str, dict[str, str]] = {
    "en": {"critical": "CRITICAL", "warning": "WARNING", "info": "INFO", "resolved": "RESOLVED",
           "host": "Host", "diagnosis": "Why", "action": "Do", "since": "Since",
           "lasted": "Resolved after", "more": "+{n} more", "cut": "…[cut]",
           "late": "Queued {at}, delivered late", "merged": "{n} queued messages in one",
           "status": "Status", "dashboard": "Dashboard", "runbook": "Runbook", "colon": ": "},
    "zh": {"critical": "严重", "warning": "警告", "info": "提示", "resolved": "已恢复",
           "host": "主机", "diagnosis": "诊断", "action": "处理", "since": "开始于",
           "lasted": "已恢复，持续", "more": "另有 {n} 条", "cut": "…[已截断]",
           "late": "排队于 {at}，延迟送达", "merged": "已合并 {n} 条排队消息",
           "status": "状态页", "dashboard": "仪表盘", "runbook": "处理手册", "colon": "："},
}  # fmt: skip
DIGEST = "InferwatchDigest"
"""The scheduled summary's alert name (notify/digest/schedule.py): its description is
multi-line text."""
_PARTIAL = re.compile(r"&[#a-zA-Z0-9]*$|<[^>]*$")


@dataclass(frozen=True, slots=True)
class Message:
    """What a channel sends: ``severity`` is the highest among firing alerts, or ``resolved``."""

    title: str
    body: str
    severity: str
    resolved: bool


def size(text: str, unit: Unit = "bytes") -> int:
    return len(text.encode("utf-8")) if unit == "bytes" else len(text)


def fit(text: str, limit: int, unit: Unit = "bytes", marker: str = "…") -> str:
    """``text`` cut to ``limit`` (UTF-8 bytes or characters) on a code-point boundary, with
    ``marker`` appended when anything was cut."""
    if limit <= 0:
        return ""
    if size(text, unit) <= limit:
        return text
    room = max(0, limit - size(marker, unit))
    if unit == "chars":
        return (text[:room] + marker)[:limit]
    # A byte cut leaves at most one partial sequence at the end; "ignore" drops just that.
    head = text.encode("utf-8")[:room].decode("utf-8", "ignore")
    return fit(head + marker, limit, unit, "") if size(head + marker) > limit else head + marker


def severity_of(alert: Mapping[str, Any]) -> str:
    sev = str(alert.get("labels", {}).get("severity", "")).lower()
    return sev if sev in RANK else "warning"


def top_severity(payload: Mapping[str, Any]) -> str:
    firing = [a for a in payload.get("alerts", []) if a.get("status") == "firing"]
    if not firing:
        return "resolved"
    return max((severity_of(a) for a in firing), key=lambda s: RANK[s])


def _parse_time(value: object) -> datetime | None:
    if not isinstance(value, str) or not value or value.startswith("0001-"):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def duration_text(seconds: float, language: Language = "en") -> str:
    total = max(0, int(seconds))
    h, rem = divmod(total, 3600)
    m, s = divmod(rem, 60)
    units = ("h", "m", "s") if language == "en" else (" 小时", " 分钟", " 秒")
    parts = [f"{v}{u}" for v, u in zip((h, m, s), units, strict=True) if v]
    return " ".join(parts) or f"0{units[2]}"


def annotation(notes: Mapping[str, Any], key: str, language: Language = "en") -> str:
    """An alert's ``summary``/``diagnosis``/``action`` in ``language``: in Chinese its ``*_zh``
    twin (``summary_zh``...) when the rule has one, else the English text."""
    if language == "zh":
        value = str(notes.get(f"{key}_zh", "")).strip()
        if value:
            return value
    return str(notes.get(key, ""))


def host_of(alert: Mapping[str, Any], payload: Mapping[str, Any]) -> str:
    labels = alert.get("labels", {})
    common = payload.get("commonLabels", {})
    return str(labels.get("host") or common.get("host") or labels.get("instance") or "")


class _Renderer:
    def __init__(self, language: Language, style: Style, tz: tzinfo) -> None:
        self.t = TEXTS[language]
        self.language: Language = language
        self.style = style
        self.tz = tz

    def delivery_note(self, payload: Mapping[str, Any]) -> str:
        """ "Queued 03:12:09, delivered late · 3 queued messages in one", or nothing."""
        ext = payload.get("inferwatch") or {}
        parts: list[str] = []
        queued = ext.get("queuedAt")
        if isinstance(queued, int | float):
            at = datetime.fromtimestamp(queued, UTC).astimezone(self.tz)
            parts.append(self.t["late"].format(at=f"{at:%Y-%m-%d %H:%M:%S %Z}"))
        merged = ext.get("merged")
        if isinstance(merged, int) and merged > 0:
            parts.append(self.t["merged"].format(n=merged + 1))
        return self.esc(" · ".join(parts))

    def link(self, title: str, url: str) -> str:
        if self.style == "markdown":
            return f"[{title}]({url})"
        if self.style == "html":
            return f'<a href="{html.escape(url)}">{html.escape(title)}</a>'
        return f"{title}: {url}"

    def links(self, payload: Mapping[str, Any], alerts: Sequence[Mapping[str, Any]]) -> str:
        """One line: each alert's runbook (annotation ``runbook_url``), then the host's status
        page and dashboard (config ``external_url``, ``grafana_url``); empty without any."""
        found: list[str] = []
        for alert in alerts:
            url = str(alert.get("annotations", {}).get("runbook_url", ""))
            if url.startswith(("http://", "https://")) and url not in found:
                found.append(url)
        parts = [self.link(self.t["runbook"], u) for u in found[:2]]
        configured = (payload.get("inferwatch") or {}).get("links") or {}
        for key in ("status", "dashboard"):
            url = str(configured.get(key, ""))
            if url:
                parts.append(self.link(self.t[key], url))
        return " · ".join(parts)

    def more(self, n: int) -> str:
        return "\n\n" + self.esc(self.t["more"].format(n=n)) if n > 0 else ""

    def esc(self, text: str) -> str:
        return html.escape(text, quote=False) if self.style == "html" else text

    def bold(self, text: str) -> str:
        if self.style == "markdown":
            return f"**{text}**"
        return f"<b>{text}</b>" if self.style == "html" else text

    def block(self, alert: Mapping[str, Any], payload: Mapping[str, Any]) -> str:
        labels = alert.get("labels", {})
        notes = alert.get("annotations", {})
        name = str(labels.get("alertname", "alert"))
        status = "resolved" if alert.get("status") == "resolved" else severity_of(alert)
        head = self.bold(self.esc(f"[{self.t[status]}] {name}"))
        lines = [f"### {head}" if self.style == "markdown" else head]
        host = host_of(alert, payload)
        if host:
            lines.append(self.esc(f"{self.t['host']}{self.t['colon']}{host}"))
        if name == DIGEST:  # a summary written for a phone already: keep its lines
            text = str(notes.get("description") or notes.get("summary", ""))
            return "\n".join([*lines, *(self.esc(line) for line in text.splitlines())])
        for key, prefix in (("summary", ""), ("diagnosis", "diagnosis"), ("action", "action")):
            value = " ".join(annotation(notes, key, self.language).split())
            if value:
                text = self.t[prefix] + self.t["colon"] + value if prefix else value
                lines.append(self.esc(text))
        numbers = [f"{k}={labels[k]}" for k in KEY_LABELS if labels.get(k) not in (None, "")]
        if numbers:
            lines.append(self.esc(" ".join(numbers)))
        when = self.when(alert)
        return "\n".join([*lines, self.esc(when)] if when else lines)

    def when(self, alert: Mapping[str, Any]) -> str:
        start = _parse_time(alert.get("startsAt"))
        end = _parse_time(alert.get("endsAt"))
        if alert.get("status") == "resolved" and start is not None and end is not None:
            lasted = duration_text((end - start).total_seconds(), self.language)
            return f"{self.t['lasted']} {lasted}"
        if start is None:
            return ""
        return f"{self.t['since']} {start.astimezone(self.tz):%Y-%m-%d %H:%M:%S %Z}"


def _started(alert: Mapping[str, Any]) -> float:
    try:
        return datetime.fromisoformat(str(alert.get("startsAt", ""))).timestamp()
    except ValueError:
        return 0.0


def ordered(alerts: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """What a phone shows first: firing before resolved, the newest first (a re-sent group
    leads with the alert that made it re-send), the more severe first at the same start."""
    return sorted(
        alerts,
        key=lambda a: (a.get("status") != "firing", -_started(a), -RANK[severity_of(a)]),
    )


def title_of(payload: Mapping[str, Any], language: Language = "en") -> str:
    """``[CRITICAL] EngineDown @ gpu-a (+2)``: the line a phone shows in its banner, naming the
    newest firing alert; the tag is the highest severity among the firing ones."""
    alerts: Sequence[Mapping[str, Any]] = payload.get("alerts", [])
    sev = top_severity(payload)
    lead = (ordered(alerts) or [{}])[0]
    name = str(lead.get("labels", {}).get("alertname", "alert"))
    host = host_of(lead, payload)
    extra = f" (+{len(alerts) - 1})" if len(alerts) > 1 else ""
    return f"[{TEXTS[language][sev]}] {name}{' @ ' + host if host else ''}{extra}"


def render(
    payload: Mapping[str, Any],
    *,
    language: Language = "en",
    style: Style = "text",
    limit: int = 4096,
    unit: Unit = "bytes",
    tz: tzinfo = UTC,
) -> Message:
    """Firing alerts first (newest first), then resolved; blocks that do not fit become a
    "+N more" line, and a single oversized block is cut with a visible marker."""
    r = _Renderer(language, style, tz)
    alerts = ordered(payload.get("alerts", []))
    more = int(payload.get("truncatedAlerts", 0) or 0)
    blocks = [r.block(a, payload) for a in alerts]
    note = r.delivery_note(payload)
    links = r.links(payload, alerts)
    tail_links = f"\n\n{links}" if links else ""
    if 2 * size(tail_links, unit) > limit:
        tail_links = ""  # links never crowd out the alerts themselves
    limit -= size(tail_links, unit)
    body, shown = note, 0
    for block in blocks:
        candidate = f"{body}\n\n{block}" if body else block
        if size(candidate + r.more(len(blocks) - shown - 1 + more), unit) > limit:
            break
        body, shown = candidate, shown + 1
    if shown == 0 and blocks:  # even the first block is too big: cut it, visibly
        tail = r.more(len(blocks) - 1 + more)
        head = f"{note}\n\n" if note else ""
        cut = _cut_html if style == "html" else fit
        room = max(0, limit - size(tail, unit) - size(head, unit))
        body = head + cut(blocks[0], room, unit, r.esc(r.t["cut"])) + tail
    else:
        body += r.more(len(blocks) - shown + more)
    sev = top_severity(payload)
    body = fit(body, limit, unit) + tail_links
    return Message(title_of(payload, language), body, sev, sev == "resolved")


def links_of(config: Config) -> dict[str, str]:
    """The configured links a message carries (``external_url`` → status, ``grafana_url`` →
    dashboard)."""
    out = {}
    if config.external_url is not None:
        out["status"] = str(config.external_url)
    if config.grafana_url is not None:
        out["dashboard"] = str(config.grafana_url)
    return out


def _cut_html(text: str, limit: int, unit: Unit, marker: str) -> str:
    """Cut HTML without leaving a half entity or tag and close a bold the cut left open
    (Telegram rejects unbalanced HTML with 400 "can't parse entities")."""
    head = _PARTIAL.sub("", fit(text, limit - size(marker, unit) - 4, unit, ""))
    return head + ("</b>" if head.count("<b>") > head.count("</b>") else "") + marker
