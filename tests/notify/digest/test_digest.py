"""Digests on the fake clock: the cron job fires at its time, lands in the outbox once per
integration and scheduled time (restarts included), reads in English or Chinese; `inferwatch
check` locates a bad digest."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from inferwatch.alerts.model import Alert, AlertState, AlertTransition
from inferwatch.clock import FakeClock
from inferwatch.config.models import Config
from inferwatch.configfile import parse_config
from inferwatch.derive.engine import names as n
from inferwatch.errors import ConfigError
from inferwatch.event import Event
from inferwatch.labels import Labels, make_labels
from inferwatch.notify.digest.schedule import (
    DIGEST_ALERT,
    DigestService,
    cron_trigger,
    scheduled_time,
)
from inferwatch.notify.outbox import Outbox
from inferwatch.runtime.scheduler import VirtualScheduler
from inferwatch.store.events import EventLog
from inferwatch.store.tsdb import SeriesStore

DAY = 86400.0
END = datetime(2026, 11, 29, 8, 0, tzinfo=UTC).timestamp()
MAIN = make_labels({"engine": "main"})
CONFIG = """
language: {language}
external_labels: {{host: gpu-a}}
route:
  receiver: phone
receivers:
  - name: phone
    webhook_configs: [{{url: "http://127.0.0.1:9/hook"}}]
    console_configs: [{{}}]
digests:
  - name: morning
    cron: "0 8 * * *"
    timezone: UTC
"""


def fill_day(store: SeriesStore, day_start: float, *, decode: float, busy: range) -> None:
    """A sample a minute: requests run in the ``busy`` hours (MAL 2.5), else the engine idles."""
    for minute in range(24 * 60):
        t = day_start + minute * 60.0
        running = minute // 60 in busy
        store.set(n.RUNNING, MAIN, 2.0 if running else 0.0, t)
        store.set(n.DECODE, MAIN, decode if running else 0.0, t)
        if running:
            store.set(n.MAL, MAIN, 2.5, t)
            store.set(n.STEPS, MAIN, decode / 2.5, t)


def transition(name: str, to: AlertState, at: float) -> AlertTransition:
    labels: Labels = make_labels({"alertname": name, "severity": "critical"})
    alert = Alert(("f", "g", name), labels, (), to, 1.0, at, at)  # type: ignore[arg-type]
    return AlertTransition(alert, AlertState.FIRING, to, at)


@dataclass
class FakeNotifications:
    """The two things a digest uses of the notification service: outbox and receivers."""

    outbox: Outbox
    integrations: dict[str, list[str]] = field(
        default_factory=lambda: {"phone": ["webhook", "console"]}
    )
    external_url: str = ""


class Host:
    """A store with two days of engine samples, an event log, an outbox, a virtual scheduler."""

    def __init__(self, tmp_path: Path, config: Config, start: float) -> None:
        self.clock = FakeClock(start)
        self.store = SeriesStore(self.clock)
        fill_day(self.store, END - 2 * DAY, decode=80.0, busy=range(1, 6))
        fill_day(self.store, END - DAY, decode=88.0, busy=range(2, 10))
        self.events = EventLog(tmp_path / "events.db")
        self.notify = FakeNotifications(Outbox(tmp_path / "outbox.db"))
        self.scheduler = VirtualScheduler(self.clock)
        self.service = DigestService(
            config, self.store, self.clock, lambda: self.notify, self.query, self.record
        )

    async def query(self, **kwargs: Any) -> list[dict[str, Any]]:
        return self.events.query(**kwargs)

    async def record(self, events: list[Event]) -> None:
        self.events.add_many(events)

    def rows(self) -> list[Any]:
        """The first pending row of each (receiver, integration, group)."""
        return self.notify.outbox.due(END + 10 * DAY)

    def close(self) -> None:
        self.events.close()
        self.notify.outbox.close()


def at(hour: int, minute: int = 0, day: int = 29) -> float:
    return datetime(2026, 11, day, hour, minute, tzinfo=UTC).timestamp()


def test_morning_digest_fires_at_its_cron_time_once(tmp_path: Path) -> None:
    config = parse_config(CONFIG.format(language="en"), "c.yaml")
    host = Host(tmp_path, config, at(6))
    host.events.add(Event("engine_crash", at(7), "log", "c1",
                          labels={"engine": "main", "signature": "cuda-oom"}))  # fmt: skip
    assert host.service.apply(config, host.scheduler) == ["digest:morning"]
    assert asyncio.run(host.scheduler.run_until(at(7, 59))) == 0
    assert host.rows() == []
    assert asyncio.run(host.scheduler.run_until(at(8))) == 1
    rows = host.rows()
    assert sorted(r.integration for r in rows) == ["console", "webhook"]
    payload = rows[0].payload
    assert payload["version"] == "4" and payload["receiver"] == "phone"
    (alert,) = payload["alerts"]
    assert alert["labels"] == {
        "alertname": DIGEST_ALERT, "severity": "info", "digest": "morning", "host": "gpu-a",
    }  # fmt: skip
    assert alert["status"] == "firing" and alert["startsAt"] == "2026-11-29T08:00:00Z"
    text = alert["annotations"]["description"]
    assert text.startswith("Daily digest 11-28 08:00 – 11-29 08:00 UTC\n")
    assert "main: decode 88.0 t/s (prev 80.0, +10.0%)" in text
    assert "steps 35.2/s (prev 32.0, +10.0%)" in text
    assert "Busy 8 h (prev 5 h): 10–18" in text
    assert "Crashes: main cuda-oom ×1" in text
    assert "\n" not in alert["annotations"]["summary"]

    # the same scheduled time again, a few minutes late (a double run): nothing new
    host.clock.advance(240)
    assert asyncio.run(host.service.fire(config.digests[0])) == 0
    assert host.notify.outbox.pending_count() == 2
    # the next morning is a new message
    assert asyncio.run(host.scheduler.run_until(at(8, 0, day=30))) == 1
    assert host.notify.outbox.pending_count() == 4
    host.close()


def test_a_restart_does_not_send_the_same_morning_twice(tmp_path: Path) -> None:
    config = parse_config(CONFIG.format(language="en"), "c.yaml")
    first = Host(tmp_path, config, at(7, 59))
    first.service.apply(config, first.scheduler)
    asyncio.run(first.scheduler.run_until(at(8, 1)))
    assert len(first.rows()) == 2
    first.close()
    # restarted just before the hour (a clock step back), same state dir
    again = Host(tmp_path, config, at(7, 59, 30))
    again.service.apply(config, again.scheduler)
    asyncio.run(again.scheduler.run_until(at(8, 1)))
    assert again.notify.outbox.pending_count() == 2
    again.close()


def test_skip_to_over_a_long_gap_fires_the_next_morning_only(tmp_path: Path) -> None:
    config = parse_config(CONFIG.format(language="en"), "c.yaml")
    host = Host(tmp_path, config, at(6, day=27))
    host.service.apply(config, host.scheduler)
    host.scheduler.skip_to(at(7, 59))
    assert asyncio.run(host.scheduler.run_until(at(8, 0))) == 1
    (row, _) = host.rows()
    assert row.payload["alerts"][0]["startsAt"] == "2026-11-29T08:00:00Z"
    host.close()


def test_chinese_digest(tmp_path: Path) -> None:
    config = parse_config(CONFIG.format(language="zh"), "c.yaml")
    host = Host(tmp_path, config, at(7))
    host.service.apply(config, host.scheduler)
    asyncio.run(host.scheduler.run_until(at(8)))
    text = host.rows()[0].payload["alerts"][0]["annotations"]["description"]
    assert text.startswith("日报 11-28 08:00 – 11-29 08:00 UTC\n")
    assert "main：解码 88.0 t/s（前日 80.0，+10.0%）" in text
    assert "忙碌 8 小时（前日 5 小时）：10–18" in text
    host.close()


def test_alerts_recorded_as_they_happen_are_counted(tmp_path: Path) -> None:
    config = parse_config(CONFIG.format(language="en"), "c.yaml")
    host = Host(tmp_path, config, at(7))

    async def scenario() -> None:
        host.service.observe([transition("EngineDown", AlertState.FIRING, at(7, 10))])
        host.service.observe([transition("EngineDown", AlertState.RESOLVED, at(7, 20))])
        await asyncio.sleep(0)  # let the background writes run (no wall-clock wait)
        await asyncio.sleep(0)
        host.service.apply(config, host.scheduler)
        await host.scheduler.run_until(at(8))

    asyncio.run(scenario())
    assert [e["type"] for e in host.events.query(types=["alert"])] == ["alert", "alert"]
    text = host.rows()[0].payload["alerts"][0]["annotations"]["description"]
    assert "Alerts fired: EngineDown ×1; resolved: EngineDown ×1" in text
    host.close()


def test_digests_keep_two_windows_of_engine_series(tmp_path: Path) -> None:
    config = parse_config(CONFIG.format(language="en"), "c.yaml")
    host = Host(tmp_path, config, END)
    host.store.trim(END)
    decode = host.store.get(n.DECODE, (("engine", "main"),))
    assert decode is not None and decode.samples()[0][0] == END - 2 * DAY
    host.close()


def test_an_unusable_receiver_enqueues_nothing(tmp_path: Path) -> None:
    config = parse_config(CONFIG.format(language="en"), "c.yaml")
    host = Host(tmp_path, config, at(7))
    host.notify.integrations = {}
    host.service.apply(config, host.scheduler)
    asyncio.run(host.scheduler.run_until(at(8)))
    assert host.rows() == []
    host.close()


def test_a_run_belongs_to_its_scheduled_time() -> None:
    trigger = cron_trigger("0 8 * * *", UTC)
    assert scheduled_time(trigger, at(8)) == at(8)
    assert scheduled_time(trigger, at(8, 4)) == at(8)
    assert scheduled_time(trigger, at(12) + 0.5) == at(12)  # off schedule: the run's own second


def problems(text: str) -> list[str]:
    with pytest.raises(ConfigError) as info:
        parse_config(text, "c.yaml")
    return [str(p) for p in info.value.problems]


def test_check_locates_a_bad_cron_expression() -> None:
    text = CONFIG.format(language="en").replace('"0 8 * * *"', '"0 25 * * *"')
    (line,) = problems(text)
    assert line.startswith("c.yaml:12:5: digests[0].cron: invalid cron expression '0 25 * * *'")


def test_check_rejects_unknown_receiver_zone_and_duplicate_names() -> None:
    text = CONFIG.format(language="en") + (
        "  - name: morning\n    cron: '0 9 * * *'\n    receiver: pager\n    timezone: Mars/Base\n"
    )
    found = problems(text)
    assert "c.yaml:14:5: digests[1].name: digest name 'morning' is used twice" in found
    assert "c.yaml:16:5: digests[1].receiver: receiver 'pager' is not defined" in found
    assert any(p.startswith("c.yaml:17:5: digests[1].timezone: unknown time zone") for p in found)
    assert len(found) == 3
