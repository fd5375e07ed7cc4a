"""The daemon's notification service: a transition travels to the outbox and a channel."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path

import pytest

from inferwatch.alerts.model import Alert, AlertState, AlertTransition, RuleKey
from inferwatch.clock import FakeClock
from inferwatch.configfile import parse_config
from inferwatch.labels import make_labels
from inferwatch.notify.service import NotifyService
from inferwatch.store.tsdb import SeriesStore


def firing(at: float) -> Alert:
    labels = make_labels({"alertname": "GpuFallenOffBus", "severity": "critical"})
    return Alert(
        rule=RuleKey("f", "g", "GpuFallenOffBus", "vector(1)", ()),
        labels=labels,
        annotations=(("summary", "GPU gone"),),
        state=AlertState.FIRING,
        value=1.0,
        active_at=at,
        fired_at=at,
    )


def test_critical_transition_is_delivered_to_console_at_once(tmp_path: Path) -> None:
    clock = FakeClock(1000.0)
    store = SeriesStore(clock)
    service = NotifyService(parse_config("", "c.yaml"), store, clock, tmp_path)
    alert = firing(clock.time())
    service.on_transitions([AlertTransition(alert, AlertState.PENDING, AlertState.FIRING, 1000.0)])
    asyncio.run(service.tick())
    assert service.outbox.pending_count() == 0
    total = store.get(
        "inferwatch_notifications_total",
        make_labels({"receiver": "console", "integration": "console", "outcome": "success"}),
    )
    assert total is not None and total.vs[-1] == 1.0
    where = make_labels({"receiver": "console", "integration": "console"})
    count = store.get("inferwatch_notification_latency_seconds_count", where)
    assert count is not None and count.vs[-1] == 1.0
    asyncio.run(service.close())


def test_corrupt_silences_file_does_not_stop_the_service(tmp_path: Path) -> None:
    (tmp_path / "silences.json").write_text("{not json")
    clock = FakeClock(0.0)
    service = NotifyService(parse_config("", "c.yaml"), SeriesStore(clock), clock, tmp_path)
    assert list(tmp_path.glob("silences.json.corrupt-*"))
    asyncio.run(service.close())


def test_notification_failures_go_to_the_fallback_receiver(tmp_path: Path) -> None:
    config = parse_config(
        "route:\n  receiver: hook\n  group_wait: 0s\n"
        "receivers:\n  - name: hook\n    webhook_configs: [{url: 'http://127.0.0.1:9/x'}]\n"
        "  - name: last\n    console_configs: [{}]\n"
        "fallback_receiver: last\n",
        "c.yaml",
    )
    clock = FakeClock(1000.0)
    store = SeriesStore(clock)
    service = NotifyService(config, store, clock, tmp_path)
    labels = make_labels(
        {"alertname": "InferwatchNotificationsFailing", "severity": "warning", "fallback": "true"}
    )
    alert = Alert(
        rule=RuleKey("f", "g", "InferwatchNotificationsFailing", "vector(1)", ()),
        labels=labels,
        annotations=(),
        state=AlertState.FIRING,
        value=1.0,
        active_at=1000.0,
        fired_at=1000.0,
    )
    service.on_transitions([AlertTransition(alert, AlertState.PENDING, AlertState.FIRING, 1000.0)])
    asyncio.run(service.tick())
    sent = store.get(
        "inferwatch_notifications_total",
        make_labels({"receiver": "last", "integration": "console", "outcome": "success"}),
    )
    assert sent is not None and sent.vs[-1] == 1.0
    assert (
        store.get(
            "inferwatch_notifications_total",
            make_labels({"receiver": "hook", "integration": "webhook", "outcome": "failure"}),
        )
        is None
    )
    asyncio.run(service.close())


class TickingClock(FakeClock):
    """Time moves a little on every read, as a real clock does during a tick."""

    def time(self) -> float:
        self.advance(0.001)
        return super().time()


def test_a_flushed_message_leaves_in_the_same_tick_even_as_time_moves(tmp_path: Path) -> None:
    clock = TickingClock(1000.0)
    service = NotifyService(parse_config("", "c.yaml"), SeriesStore(clock), clock, tmp_path)
    alert = firing(clock.time())
    service.on_transitions([AlertTransition(alert, AlertState.PENDING, AlertState.FIRING, 1000.0)])
    asyncio.run(service.tick())  # one tick: flushed, queued and sent (group_wait 0 for critical)
    assert service.outbox.pending_count() == 0
    asyncio.run(service.close())


def alert(name: str, at: float, **labels: str) -> Alert:
    return Alert(
        rule=RuleKey("f", "g", name, "vector(1)", ()),
        labels=make_labels({"alertname": name, "severity": "critical", **labels}),
        annotations=(("summary", name),),
        state=AlertState.FIRING,
        value=1.0,
        active_at=at,
        fired_at=at,
    )


def sent_payloads(path: Path) -> list[dict[str, object]]:
    with sqlite3.connect(path / "outbox.db") as db:
        rows = db.execute("SELECT payload FROM outbox ORDER BY id").fetchall()
    return [json.loads(payload) for (payload,) in rows]


@pytest.mark.parametrize("kernel_first", [False, True])
def test_a_crash_and_the_kernel_fault_of_the_same_moment_leave_as_one_message(
    tmp_path: Path, kernel_first: bool
) -> None:
    clock = FakeClock(1000.0)
    service = NotifyService(parse_config("", "c.yaml"), SeriesStore(clock), clock, tmp_path)
    crash = alert("EngineCrashed", 1000.0, engine="e", signature="illegal_memory_access")
    fault = alert("GpuMmuFaultOnAllRanks", 1000.0, classification="software-oob-all-ranks")
    first, second = (fault, crash) if kernel_first else (crash, fault)
    service.on_transitions([AlertTransition(first, AlertState.PENDING, AlertState.FIRING, 1000.0)])
    asyncio.run(service.tick())
    clock.advance(1.5)  # the other source's line comes a moment later
    service.on_transitions([AlertTransition(second, AlertState.PENDING, AlertState.FIRING, 1001.5)])
    for _ in range(8):
        asyncio.run(service.tick())
        clock.advance(1.0)
    asyncio.run(service.close())
    (payload,) = sent_payloads(tmp_path)
    alerts = payload["alerts"]
    assert isinstance(alerts, list)
    assert sorted(a["labels"]["alertname"] for a in alerts) == [
        "EngineCrashed", "GpuMmuFaultOnAllRanks"
    ]  # fmt: skip


def test_status_lists_flag_files_and_whether_they_are_present(tmp_path: Path) -> None:
    flag = tmp_path / "maintenance"
    body = (
        f"silence_files:\n  - path: {flag}\n    matchers: ['engine=~\"e.*\"']\n"
        "    comment: model swap\n"
    )
    clock = FakeClock(0.0)
    service = NotifyService(parse_config(body, "c.yaml"), SeriesStore(clock), clock, tmp_path)
    (doc,) = service.status()["silence_files"]
    assert doc == {
        "id": f"file:{flag}",
        "path": str(flag),
        "matchers": [{"name": "engine", "value": "e.*", "isRegex": True, "isEqual": True}],
        "comment": "model swap",
        "active": False,
    }
    flag.touch()
    assert service.status()["silence_files"][0]["active"] is True
    asyncio.run(service.close())


def test_external_labels_join_every_alert_and_the_alerts_own_win(tmp_path: Path) -> None:
    """As Prometheus does for the alerts it sends: `host` (and any external label) is on every
    alert the routes, inhibit rules, messages and a pushed-to Alertmanager see."""
    clock = FakeClock(1000.0)
    config = parse_config("external_labels: {host: gpu-01, dc: lab}\n", "c.yaml")
    service = NotifyService(config, SeriesStore(clock), clock, tmp_path)
    own = alert("GpuLost", 1000.0, dc="rack-7")  # the alert's own label wins
    service.on_transitions([AlertTransition(own, AlertState.PENDING, AlertState.FIRING, 1000.0)])
    asyncio.run(service.tick())
    asyncio.run(service.close())
    (payload,) = sent_payloads(tmp_path)
    alerts = payload["alerts"]
    assert isinstance(alerts, list)
    (labels,) = [a["labels"] for a in alerts]
    assert labels["host"] == "gpu-01" and labels["dc"] == "rack-7"


def test_inhibition_with_equal_host_sees_the_external_host(tmp_path: Path) -> None:
    clock = FakeClock(1000.0)
    config = parse_config(
        "external_labels: {host: gpu-01}\n"
        "inhibit_rules:\n"
        "  - source_matchers: ['alertname=\"GpuFallenOffBus\"']\n"
        "    target_matchers: ['alertname=\"GpuHardwareXid\"']\n"
        "    equal: [host, pci_bus_id]\n",
        "c.yaml",
    )
    service = NotifyService(config, SeriesStore(clock), clock, tmp_path)
    cause = alert("GpuFallenOffBus", 1000.0, pci_bus_id="0000:03:00.0")
    effect = alert("GpuHardwareXid", 1000.0, pci_bus_id="0000:03:00.0", xid="79")
    service.on_transitions([AlertTransition(a, AlertState.PENDING, AlertState.FIRING, 1000.0)
                            for a in (cause, effect)])  # fmt: skip
    for _ in range(4):
        asyncio.run(service.tick())
        clock.advance(1.0)
    asyncio.run(service.close())
    sent = [a["labels"]["alertname"] for p in sent_payloads(tmp_path) for a in p["alerts"]]  # type: ignore[attr-defined]
    assert sent == ["GpuFallenOffBus"]
