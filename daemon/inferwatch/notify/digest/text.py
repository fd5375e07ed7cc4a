"""A digest summary as phone-sized text, in English or Chinese.

One headline (the window, in the digest's zone) and a handful of short lines: busy hours, one
line per engine with its busy-time medians against the previous window, then incidents, crashes,
downloads (only when there were any) and the alerts that fired and resolved. Long lists keep
their most frequent items and count the rest.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, tzinfo
from typing import Literal

from inferwatch.notify.digest.summary import Change, Counts, EngineDay, Summary

Language = Literal["en", "zh"]
MAX_ITEMS = 5
MAX_RANGES = 6
STACK_DROP_PCT = -10.0
"""A step rate this much below the previous window points at the stack (host.md)."""
DAY = 86400.0

TEXTS: dict[str, dict[str, str]] = {
    "en": {"daily": "Daily digest", "digest": "Digest", "busy": "Busy {h} h", "prev": "prev",
           "prev_busy": " (prev {h} h)", "all_day": "all day", "idle": "no running requests",
           "no_busy": "Busy hours: no engine data", "no_engines": "Engines: no data",
           "decode": "decode", "mal": "MAL", "steps": "steps", "no_data": "no data",
           "no_prev": "prev: no data", "incidents": "Incidents", "crashes": "Crashes",
           "downloads": "Downloads", "fired": "Alerts fired", "resolved": "resolved",
           "alerts_none": "Alerts: none fired or resolved", "none": "none",
           "more": "+{n} more", "colon": ": ", "sep": "; ", "comma": ", ",
           "stack": "{e}: step rate {p}: suspect the stack (driver, engine, clocks), "
                    "not the content"},
    "zh": {"daily": "日报", "digest": "摘要", "busy": "忙碌 {h} 小时", "prev": "前期",
           "prev_busy": "（前期 {h} 小时）", "all_day": "全天", "idle": "无运行中的请求",
           "no_busy": "忙碌时段：无引擎数据", "no_engines": "引擎：无数据",
           "decode": "解码", "mal": "MAL", "steps": "步速", "no_data": "无数据",
           "no_prev": "前期无数据", "incidents": "故障事件", "crashes": "引擎崩溃",
           "downloads": "下载", "fired": "告警触发", "resolved": "恢复",
           "alerts_none": "告警：无触发或恢复", "none": "无",
           "more": "另有 {n} 项", "colon": "：", "sep": "；", "comma": "，",
           "stack": "{e}：步速 {p}，疑为软件栈问题（驱动、引擎、频率），而非内容"},
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class DigestText:
    title: str
    lines: tuple[str, ...]

    @property
    def text(self) -> str:
        """The multi-line message: headline, then one fact a line."""
        return "\n".join((self.title, *self.lines))

    @property
    def one_line(self) -> str:
        """The same facts on one line, for renderers that fold line breaks."""
        return " | ".join((self.title, *self.lines))


def render_digest(summary: Summary, language: Language, tz: tzinfo) -> DigestText:
    t = TEXTS[language]
    if language == "zh" and summary.window == DAY:
        t = {**t, "prev": "前日", "prev_busy": "（前日 {h} 小时）", "no_prev": "前日无数据"}
    start = datetime.fromtimestamp(summary.start, tz)
    end = datetime.fromtimestamp(summary.end, tz)
    label = t["daily"] if summary.window == DAY else t["digest"]
    title = f"{label} {start:%m-%d %H:%M} – {end:%m-%d %H:%M} {end.tzname() or ''}".rstrip()
    lines = [_busy(summary, t, tz)]
    if summary.engines:
        for day in summary.engines:
            lines.append(_engine(day, t))
            pct = day.steps.percent
            if pct is not None and pct <= STACK_DROP_PCT:
                lines.append(t["stack"].format(e=day.engine, p=f"{pct:+.1f}%"))
    else:
        lines.append(t["no_engines"])
    lines.append(t["incidents"] + t["colon"] + _items(summary.incidents, t))
    lines.append(t["crashes"] + t["colon"] + _items(summary.crashes, t))
    if summary.downloads:
        lines.append(t["downloads"] + t["colon"] + _items(summary.downloads, t))
    if summary.fired or summary.resolved:
        alerts = t["fired"] + t["colon"] + _items(summary.fired, t)
        alerts += t["sep"] + t["resolved"] + t["colon"] + _items(summary.resolved, t)
        lines.append(alerts)
    else:
        lines.append(t["alerts_none"])
    return DigestText(title, tuple(lines))


def _busy(summary: Summary, t: dict[str, str], tz: tzinfo) -> str:
    if not summary.has_running:
        return t["no_busy"]
    hours = summary.busy_hours
    head = t["busy"].format(h=len(hours))
    if summary.busy_hours_previous is not None:
        head += t["prev_busy"].format(h=summary.busy_hours_previous)
    if not hours:
        return head + t["colon"] + t["idle"]
    if len(hours) * 3600 >= summary.window:
        return head + t["colon"] + t["all_day"]
    ranges: list[tuple[float, float]] = []
    for h in hours:
        if ranges and h - ranges[-1][1] <= 3600:
            ranges[-1] = (ranges[-1][0], h)
        else:
            ranges.append((h, h))
    shown = [
        f"{datetime.fromtimestamp(a, tz):%H}–{datetime.fromtimestamp(b + 3600, tz):%H}"
        for a, b in ranges[:MAX_RANGES]
    ]
    if len(ranges) > MAX_RANGES:
        shown.append(t["more"].format(n=len(ranges) - MAX_RANGES))
    return head + t["colon"] + ", ".join(shown)


def _engine(day: EngineDay, t: dict[str, str]) -> str:
    parts = [
        _change(t[key], change, digits, unit, t)
        for key, change, digits, unit in (
            ("decode", day.decode, 1, " t/s"),
            ("mal", day.mal, 2, ""),
            ("steps", day.steps, 1, "/s"),
        )
        if change.current is not None or change.previous is not None
    ]
    return day.engine + t["colon"] + t["sep"].join(parts)


def _change(name: str, change: Change, digits: int, unit: str, t: dict[str, str]) -> str:
    open_, close = ("（", "）") if t["colon"] == "：" else (" (", ")")
    if change.current is None:
        prev = f"{change.previous:.{digits}f}"
        return f"{name} {t['no_data']}{open_}{t['prev']} {prev}{close}"
    now = f"{name} {change.current:.{digits}f}{unit}"
    if change.previous is None:
        return f"{now}{open_}{t['no_prev']}{close}"
    pct = change.percent
    diff = "" if pct is None else f"{t['comma']}{pct:+.1f}%"
    return f"{now}{open_}{t['prev']} {change.previous:.{digits}f}{diff}{close}"


def _items(counts: Counts, t: dict[str, str]) -> str:
    if not counts:
        return t["none"]
    shown = [f"{name} ×{count}" for name, count in counts[:MAX_ITEMS]]
    if len(counts) > MAX_ITEMS:
        shown.append(t["more"].format(n=len(counts) - MAX_ITEMS))
    return t["comma"].join(shown)
