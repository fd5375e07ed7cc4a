"""Digest summaries: busy-time medians against the previous window, counts of what happened."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

from inferwatch.alerts.model import Alert, AlertState, AlertTransition
from inferwatch.clock import FakeClock
from inferwatch.derive.engine import names as n
from inferwatch.event import Event
from inferwatch.labels import make_labels
from inferwatch.notify.digest.summary import Summary, alert_events, summarize
from inferwatch.notify.digest.text import render_digest
from inferwatch.store.events import EventLog
from inferwatch.store.tsdb import SeriesStore

END = datetime(2026, 11, 29, 8, 0, tzinfo=UTC).timestamp()
DAY = 86400.0
MAIN = make_labels({"engine": "main"})


def fill_day(
    store: SeriesStore,
    day_start: float,
    *,
    decode: float,
    mal: float,
    busy: range,
    labels: tuple[tuple[str, str], ...] = MAIN,
) -> None:
    """One sample a minute; requests run in the ``busy`` hours (offsets from ``day_start``),
    the engine idles (0 t/s, nothing running, no MAL) in the others."""
    for minute in range(24 * 60):
        t = day_start + minute * 60.0
        if minute // 60 in busy:
            store.set(n.RUNNING, labels, 2.0, t)
            store.set(n.DECODE, labels, decode + (minute % 3 - 1), t)  # median = decode
            store.set(n.MAL, labels, mal, t)
            store.set(n.STEPS, labels, decode / mal, t)
        else:
            store.set(n.RUNNING, labels, 0.0, t)
            store.set(n.DECODE, labels, 0.0, t)


def two_days() -> SeriesStore:
    store = SeriesStore(FakeClock(END))
    fill_day(store, END - 2 * DAY, decode=80.0, mal=2.5, busy=range(1, 6))  # 09-14 UTC
    fill_day(store, END - DAY, decode=88.0, mal=2.5, busy=range(2, 10))  # 10-18 UTC
    return store


def transition(name: str, to: AlertState, at: float) -> AlertTransition:
    alert = Alert(
        rule=("f", "g", name),  # type: ignore[arg-type]
        labels=make_labels({"alertname": name, "severity": "warning"}),
        annotations=(("summary", f"{name} happened"),),
        state=to,
        value=1.0,
        active_at=at - 60,
        fired_at=at - 60,
        resolved_at=at if to is AlertState.RESOLVED else None,
    )
    return AlertTransition(alert, AlertState.FIRING, to, at)


def some_events(tmp_path: Path, *, download: bool = False) -> list[dict[str, object]]:
    log = EventLog(tmp_path / "events.db")
    at = END - 3600
    events = [
        Event("fault_incident", at, "kmsg", "i1", labels={"classification": "hardware-memory"}),
        Event("fault_incident", at + 1, "kmsg", "i2", labels={"classification": "hardware-memory"}),
        Event("fault_incident", END - 3 * DAY, "kmsg", "old", labels={"classification": "driver"}),
        Event("engine_crash", at, "log", "c1", labels={"engine": "main", "signature": "cuda-oom"}),
        Event("xid", at, "kmsg", "x1", labels={"xid": "79"}),
    ]
    if download:
        events.append(Event("download_finished", at, "dl", "d1", labels={"name": "nvfp4"}))
    events += alert_events(
        [
            transition("EngineSlow", AlertState.FIRING, at),
            transition("EngineSlow", AlertState.RESOLVED, at + 600),
            transition("EngineSlow", AlertState.FIRING, at + 900),
            transition("GpuHot", AlertState.FIRING, at + 5),
            transition("GpuHot", AlertState.PENDING, at + 6),  # not a fired/resolved event
        ]
    )
    log.add_many(events)
    rows = log.query(since=END - DAY, until=END, limit=10_000)
    log.close()
    return rows


def test_medians_count_busy_samples_only_and_compare_with_the_day_before(tmp_path: Path) -> None:
    summary = summarize(two_days(), some_events(tmp_path), end=END, window=DAY, tz=UTC)
    assert summary.start == END - DAY
    (main,) = summary.engines
    assert main.engine == "main"
    assert main.decode.current == 88.0 and main.decode.previous == 80.0
    assert main.decode.percent is not None and round(main.decode.percent, 1) == 10.0
    assert main.mal.current == 2.5 and main.mal.percent == 0.0
    assert main.steps.current is not None and round(main.steps.current, 2) == 35.2
    assert len(summary.busy_hours) == 8
    assert summary.busy_hours_previous == 5
    assert summary.incidents == (("hardware-memory", 2),)
    assert summary.crashes == (("main cuda-oom", 1),)
    assert summary.downloads == ()
    assert summary.fired == (("EngineSlow", 2), ("GpuHot", 1))
    assert summary.resolved == (("EngineSlow", 1),)


def test_english_text_has_medians_changes_and_counts(tmp_path: Path) -> None:
    summary = summarize(two_days(), some_events(tmp_path), end=END, window=DAY, tz=UTC)
    text = render_digest(summary, "en", UTC)
    assert text.title == "Daily digest 11-28 08:00 – 11-29 08:00 UTC"
    lines = text.text.splitlines()
    assert "Busy 8 h (prev 5 h): 10–18" in lines
    assert (
        "main: decode 88.0 t/s (prev 80.0, +10.0%); MAL 2.50 (prev 2.50, +0.0%); "
        "steps 35.2/s (prev 32.0, +10.0%)" in lines
    )
    assert "Incidents: hardware-memory ×2" in lines
    assert "Crashes: main cuda-oom ×1" in lines
    assert "Alerts fired: EngineSlow ×2, GpuHot ×1; resolved: EngineSlow ×1" in lines
    assert not any(line.startswith("Downloads") for line in lines)
    assert "\n" not in text.one_line and "decode 88.0 t/s" in text.one_line


def test_chinese_text_and_local_hours(tmp_path: Path) -> None:
    shanghai = ZoneInfo("Asia/Shanghai")
    summary = summarize(two_days(), some_events(tmp_path), end=END, window=DAY, tz=shanghai)
    text = render_digest(summary, "zh", shanghai)
    assert text.title == "日报 11-28 16:00 – 11-29 16:00 CST"
    body = text.text
    assert "忙碌 8 小时（前日 5 小时）：18–02" in body
    assert "main：解码 88.0 t/s（前日 80.0，+10.0%）" in body
    assert "故障事件：hardware-memory ×2" in body
    assert "引擎崩溃：main cuda-oom ×1" in body
    assert "告警触发：EngineSlow ×2，GpuHot ×1；恢复：EngineSlow ×1" in body


def test_downloads_line_only_when_there_were_downloads(tmp_path: Path) -> None:
    summary = summarize(SeriesStore(FakeClock(END)), some_events(tmp_path, download=True),
                        end=END, window=DAY, tz=UTC)  # fmt: skip
    assert summary.downloads == (("nvfp4 download_finished", 1),)
    assert "Downloads: nvfp4 download_finished ×1" in render_digest(summary, "en", UTC).lines


def test_a_step_rate_drop_points_at_the_stack() -> None:
    store = SeriesStore(FakeClock(END))
    fill_day(store, END - 2 * DAY, decode=100.0, mal=2.5, busy=range(1, 6))
    fill_day(store, END - DAY, decode=80.0, mal=2.5, busy=range(1, 6))
    text = render_digest(summarize(store, [], end=END, window=DAY, tz=UTC), "en", UTC)
    assert any("step rate -20.0%: suspect the stack" in line for line in text.lines)


def test_no_data_says_so_and_never_crashes() -> None:
    summary = summarize(SeriesStore(FakeClock(END)), [], end=END, window=DAY, tz=UTC)
    assert summary == Summary(END - DAY, END, DAY, False, (), None, (), (), (), (), (), ())
    lines = render_digest(summary, "en", UTC).lines
    assert lines == (
        "Busy hours: no engine data",
        "Engines: no data",
        "Incidents: none",
        "Crashes: none",
        "Alerts: none fired or resolved",
    )
    zh = render_digest(summary, "zh", UTC).lines
    assert zh[0] == "忙碌时段：无引擎数据" and zh[-1] == "告警：无触发或恢复"


def test_only_today_or_only_yesterday() -> None:
    store = SeriesStore(FakeClock(END))
    fill_day(store, END - DAY, decode=88.0, mal=2.5, busy=range(2, 4))
    other = make_labels({"engine": "old"})
    fill_day(store, END - 2 * DAY, decode=50.0, mal=2.0, busy=range(2, 4), labels=other)
    summary = summarize(store, [], end=END, window=DAY, tz=UTC)
    lines = render_digest(summary, "en", UTC).lines
    assert (
        "main: decode 88.0 t/s (prev: no data); MAL 2.50 (prev: no data); "
        "steps 35.2/s (prev: no data)" in lines
    )
    assert (
        "old: decode no data (prev 50.0); MAL no data (prev 2.00); "
        "steps no data (prev 25.0)" in lines
    )


def test_idle_day_has_no_busy_hours(tmp_path: Path) -> None:
    store = SeriesStore(FakeClock(END))
    fill_day(store, END - DAY, decode=88.0, mal=2.5, busy=range(0))
    lines = render_digest(summarize(store, [], end=END, window=DAY, tz=UTC), "en", UTC).lines
    assert lines[0] == "Busy 0 h: no running requests"
    assert lines[1] == "Engines: no data"


def test_alert_events_keep_fired_and_resolved_only() -> None:
    events = alert_events(
        [transition("A", AlertState.FIRING, 10.0), transition("A", AlertState.PENDING, 11.0)]
    )
    assert [(e.type, dict(e.labels)) for e in events] == [
        ("alert", {"alertname": "A", "state": "firing", "severity": "warning"})
    ]
    again = alert_events([transition("A", AlertState.FIRING, 10.0)])
    assert again[0].key == events[0].key  # the same transition seen twice is one row
