"""Backlogs: quiet hours that hold, merged backlogs, rate limits, dead letters, restarts.

The notification service runs on a fake clock; channels are recording fakes except for the WeCom
rate-limit test, which talks HTTP to a local robot emulator answering errcode 45009.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from aiohttp import web

from conftest import free_port
from inferwatch.alerts.model import Alert, AlertState, AlertTransition, RuleKey
from inferwatch.clock import FakeClock
from inferwatch.configfile import parse_config
from inferwatch.labels import make_labels
from inferwatch.notify.deadletter import ALERTNAME as UNDELIVERED
from inferwatch.notify.outbox import RowState
from inferwatch.notify.retry import Outcome
from inferwatch.notify.service import NotifyService
from inferwatch.store.tsdb import SeriesStore

T0 = datetime(2026, 11, 30, 2, 0, tzinfo=UTC).timestamp()  # 02:00 UTC, inside "night"


def alert(name: str, severity: str, state: AlertState, at: float, **labels: str) -> Alert:
    rule = RuleKey("rules.yaml", "g", name, "vector(1)", ())
    return Alert(
        rule=rule,
        labels=make_labels({"alertname": name, "severity": severity, **labels}),
        annotations=(("summary", f"{name} happened"),),
        state=state,
        value=1.0,
        active_at=at,
        fired_at=at,
        resolved_at=at if state is AlertState.RESOLVED else None,
        last_eval=at,
    )


def fire(service: NotifyService, a: Alert) -> None:
    service.on_transitions([AlertTransition(a, AlertState.PENDING, a.state, a.last_eval)])


def resolve(service: NotifyService, a: Alert, at: float) -> None:
    done = alert(a.name, a.label("severity"), AlertState.RESOLVED, at, **_extra(a))
    done = Alert(**{**_fields(done), "fired_at": a.fired_at, "active_at": a.active_at})
    service.on_transitions([AlertTransition(done, AlertState.FIRING, AlertState.RESOLVED, at)])


def _extra(a: Alert) -> dict[str, str]:
    return {k: v for k, v in a.labels if k not in ("alertname", "severity")}


def _fields(a: Alert) -> dict[str, Any]:
    return {f: getattr(a, f) for f in Alert.__dataclass_fields__}


class Recorder:
    """A channel that records what it is given and answers from a script (then ok)."""

    integration = "webhook"

    def __init__(self, *script: Outcome, down_until: float = 0.0) -> None:
        self.script = list(script)
        self.down_until = down_until
        self.got: list[tuple[float, Mapping[str, Any], str | None]] = []
        self.clock: FakeClock | None = None
        self.refused = 0

    async def notify(
        self, payload: Mapping[str, Any], idempotency_key: str | None = None
    ) -> Outcome:
        now = self.clock.time() if self.clock else 0.0
        if now < self.down_until:
            self.refused += 1
            return Outcome.retry("ConnectError: connection refused")
        self.got.append((now, payload, idempotency_key))
        return self.script.pop(0) if self.script else Outcome.ok()

    async def aclose(self) -> None:
        return None

    def alerts(self) -> list[tuple[str, str]]:
        return [
            (a["labels"]["alertname"], a["status"]) for _, p, _ in self.got for a in p["alerts"]
        ]


def service_with(
    config_text: str, tmp_path: Path, clock: FakeClock, **fakes: Recorder
) -> NotifyService:
    service = NotifyService(
        parse_config(config_text, "c.yaml"), SeriesStore(clock), clock, tmp_path
    )
    for receiver, fake in fakes.items():
        fake.clock = clock
        service.notifiers[(receiver, "webhook")] = fake
    return service


def run_ticks(service: NotifyService, clock: FakeClock, seconds: int, step: float = 1.0) -> None:
    async def go() -> None:
        for _ in range(int(seconds / step)):
            await service.tick()
            clock.advance(step)

    asyncio.run(go())


HOOK = "receivers:\n  - name: phone\n    webhook_configs: [{url: 'http://127.0.0.1:9/x'}]\n"
QUIET = (
    "time_intervals:\n  - name: night\n    time_intervals:\n"
    "      - times: [{start_time: '00:00', end_time: '07:00'}]\n        location: UTC\n"
    "route:\n  receiver: phone\n  group_by: [alertname]\n  group_wait: 0s\n"
    "  group_interval: 10s\n  repeat_interval: 12h\n  hold_time_intervals: [night]\n"
    "  routes:\n    - matchers: ['severity=\"critical\"']\n      hold_time_intervals: []\n"
) + HOOK


def test_quiet_hours_hold_a_warning_until_they_end_but_not_a_critical(tmp_path: Path) -> None:
    clock = FakeClock(T0)
    phone = Recorder()
    service = service_with(QUIET, tmp_path, clock, phone=phone)
    warn = alert("GpuClockOffsetLost", "warning", AlertState.FIRING, clock.time())
    crit = alert("EngineCrashed", "critical", AlertState.FIRING, clock.time())
    fire(service, warn)
    fire(service, crit)
    run_ticks(service, clock, 30)
    assert phone.alerts() == [("EngineCrashed", "firing")]  # the critical one left at once
    resolve(service, warn, clock.time())  # the warning ends during the night: still told
    run_ticks(service, clock, 60)
    assert len(phone.got) == 1
    clock.set(datetime(2026, 11, 30, 6, 59, 30, tzinfo=UTC).timestamp())
    run_ticks(service, clock, 20)
    assert len(phone.got) == 1  # 06:59:50: still quiet
    run_ticks(service, clock, 20)
    assert len(phone.got) == 2  # 07:00: one message with the whole night's news for that group
    at, payload, _ = phone.got[1]
    assert at == datetime(2026, 11, 30, 7, 0, tzinfo=UTC).timestamp()
    assert [(a["labels"]["alertname"], a["status"]) for a in payload["alerts"]] == [
        ("GpuClockOffsetLost", "resolved")  # fired and resolved: never a stale firing message
    ]
    assert payload["inferwatch"]["merged"] == 1 and payload["inferwatch"]["queuedAt"] == T0
    asyncio.run(service.close())


ONE_GROUP = (
    "route:\n  receiver: phone\n  group_by: [alertname]\n  group_wait: 0s\n  group_interval: 10s\n"
    + HOOK
)


def test_a_backlog_after_an_outage_leaves_as_one_message_with_every_alert(tmp_path: Path) -> None:
    clock = FakeClock(T0)
    phone = Recorder(down_until=T0 + 60)
    service = service_with(ONE_GROUP, tmp_path, clock, phone=phone)
    gpus = [
        alert("GpuXid", "warning", AlertState.FIRING, clock.time(), gpu=str(i)) for i in range(3)
    ]
    for i, a in enumerate(gpus):
        fire(service, Alert(**{**_fields(a), "last_eval": clock.time()}))
        run_ticks(service, clock, 15)
        if i == 1:
            resolve(service, gpus[0], clock.time())
    run_ticks(service, clock, 600)
    delivered = [p for _, p, _ in phone.got]
    assert phone.refused >= 3 and len(delivered) == 1
    got = {(a["labels"]["gpu"], a["status"]) for a in delivered[0]["alerts"]}
    assert got == {("0", "resolved"), ("1", "firing"), ("2", "firing")}
    assert service.outbox.pending_count() == 0
    asyncio.run(service.close())


def test_groups_survive_a_restart_no_repeat_and_the_resolve_still_goes(tmp_path: Path) -> None:
    clock = FakeClock(T0)
    phone = Recorder()
    service = service_with(ONE_GROUP, tmp_path, clock, phone=phone)
    a = alert("EngineStalled", "warning", AlertState.FIRING, clock.time())
    fire(service, a)
    run_ticks(service, clock, 5)
    assert phone.alerts() == [("EngineStalled", "firing")]
    service.outbox.close()  # the process dies: nothing else is saved
    phone2 = Recorder()
    service = service_with(ONE_GROUP, tmp_path, clock, phone=phone2)
    fire(service, a)  # re-evaluated after the restart: same alert, already announced
    run_ticks(service, clock, 30)
    assert phone2.got == []
    resolve(service, a, clock.time())
    run_ticks(service, clock, 15)
    assert phone2.alerts() == [("EngineStalled", "resolved")]
    asyncio.run(service.close())


def test_an_alert_waiting_in_group_wait_is_not_lost_by_a_kill(tmp_path: Path) -> None:
    text = ONE_GROUP.replace("group_wait: 0s", "group_wait: 30s")
    clock = FakeClock(T0)
    service = service_with(text, tmp_path, clock, phone=Recorder())
    fire(service, alert("GpuThrottled", "warning", AlertState.FIRING, clock.time()))
    run_ticks(service, clock, 10)
    service.outbox.close()  # killed inside group_wait; the rule state says "already firing"
    phone = Recorder()
    service = service_with(text, tmp_path, clock, phone=phone)
    run_ticks(service, clock, 30)
    assert phone.alerts() == [("GpuThrottled", "firing")]
    asyncio.run(service.close())


def test_a_dead_letter_is_announced_through_the_fallback_receiver(tmp_path: Path) -> None:
    text = (
        ONE_GROUP
        + "  - name: last\n    webhook_configs: [{url: 'http://127.0.0.1:9/y'}]\nfallback_receiver: last\n"
    )
    clock = FakeClock(T0)
    phone, last = (
        Recorder(Outcome.permanent("wecom: errcode 93000: invalid webhook url")),
        Recorder(),
    )
    service = service_with(text, tmp_path, clock, phone=phone, last=last)
    fire(service, alert("GpuFallenOffBus", "critical", AlertState.FIRING, clock.time()))
    run_ticks(service, clock, 3)
    assert len(phone.got) == 1 and len(last.got) == 1
    payload = last.got[0][1]
    head, original = payload["alerts"]
    assert head["labels"]["alertname"] == UNDELIVERED
    assert head["labels"]["severity"] == "critical" and head["labels"]["receiver"] == "phone"
    assert "93000" in head["annotations"]["diagnosis"]
    assert head["annotations"]["summary_zh"] == "发往 phone/webhook 的一条通知未能送达"
    assert original["labels"]["alertname"] == "GpuFallenOffBus"
    last = service.status()["last_attempts"]["phone/webhook"]
    assert last["outcome"] == "permanent" and "93000" in last["reason"]
    rows = service.outbox._conn.execute("SELECT receiver, state FROM outbox ORDER BY id").fetchall()
    assert rows == [("phone", RowState.DEAD.value), ("last", RowState.SENT.value)]
    asyncio.run(service.close())


class RateLimitedRobot:
    """The WeCom robot's documented limit: 20 messages per minute per key, then errcode 45009.
    Stricter here (``limit`` per 60 s of the fake clock) so the daemon's bucket is overrun."""

    def __init__(self, clock: FakeClock, limit: int) -> None:
        self.clock, self.limit = clock, limit
        self.accepted: list[tuple[float, dict[str, Any]]] = []
        self.refused = 0

    async def handle(self, request: web.Request) -> web.Response:
        body = json.loads(await request.read())
        now = self.clock.time()
        recent = [t for t, _ in self.accepted if now - t < 60.0]
        if len(recent) >= self.limit:
            self.refused += 1
            return web.json_response({"errcode": 45009, "errmsg": "api freq out of limit"})
        self.accepted.append((now, body))
        return web.json_response({"errcode": 0, "errmsg": "ok"})


def test_wecom_45009_slows_sending_and_nothing_is_dropped(tmp_path: Path) -> None:
    clock = FakeClock(T0)
    robot = RateLimitedRobot(clock, limit=3)

    async def scenario() -> NotifyService:
        app = web.Application()
        app.router.add_post("/cgi-bin/webhook/send", robot.handle)
        runner = web.AppRunner(app)
        await runner.setup()
        port = free_port()
        await web.TCPSite(runner, "127.0.0.1", port).start()
        text = (
            "route:\n  receiver: wx\n  group_by: [alertname]\n  group_wait: 0s\n  group_interval: 10s\n"
            f"receivers:\n  - name: wx\n    wecom_configs: [{{key: K, api_url: 'http://127.0.0.1:{port}/cgi-bin/webhook/send'}}]\n"
        )
        service = NotifyService(parse_config(text, "c.yaml"), SeriesStore(clock), clock, tmp_path)
        try:
            for i in range(12):  # twelve different alerts at once: twelve groups
                fire(service, alert(f"Fault{i:02d}", "warning", AlertState.FIRING, clock.time()))
            for _ in range(900):
                await service.tick()
                clock.advance(1.0)
        finally:
            await service.close()
            await runner.cleanup()
        return service

    asyncio.run(scenario())
    names = sorted(re.search(r"Fault\d\d", b["markdown"]["content"])[0] for _, b in robot.accepted)  # type: ignore[index]
    assert names == [f"Fault{i:02d}" for i in range(12)]  # each once, none dropped
    assert 1 <= robot.refused <= 4  # the first 45009 paused the robot instead of hammering it
    times = [t for t, _ in robot.accepted]
    assert times[-1] - times[0] >= 180  # twelve messages at three a minute


def test_a_success_releases_the_channels_other_rows_from_backoff(tmp_path: Path) -> None:
    clock = FakeClock(T0)
    phone = Recorder(down_until=T0 + 30)
    text = ONE_GROUP + "outbox:\n  retry_max: 10m\n"
    service = service_with(text, tmp_path, clock, phone=phone)
    for name in ("GpuA", "GpuB", "GpuC"):  # three groups, each backing off on its own
        fire(service, alert(name, "warning", AlertState.FIRING, clock.time()))
    run_ticks(service, clock, 200)
    times = sorted(at for at, _, _ in phone.got)
    assert len(times) == 3
    assert times[-1] - times[0] <= 1.0  # the first success let the other two go at once
    asyncio.run(service.close())


def test_groups_changed_just_before_a_reload_are_kept(tmp_path: Path) -> None:
    text = ONE_GROUP.replace("group_wait: 0s", "group_wait: 30s")
    clock = FakeClock(T0)
    service = service_with(text, tmp_path, clock, phone=Recorder())
    fire(service, alert("GpuThrottled", "warning", AlertState.FIRING, clock.time()))
    asyncio.run(service.close())  # SIGHUP: the service is rebuilt before any tick ran
    phone = Recorder()
    service = service_with(text, tmp_path, clock, phone=phone)
    run_ticks(service, clock, 40)
    assert phone.alerts() == [("GpuThrottled", "firing")]
    asyncio.run(service.close())
