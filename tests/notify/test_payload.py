"""Webhook payload v4 and the Alertmanager v2 push body, built from inferwatch alerts."""

from __future__ import annotations

import json

from inferwatch.alerts.model import Alert, AlertState, RuleKey
from inferwatch.labels import make_labels
from inferwatch.notify.payload import (
    JSON,
    ZERO_TIME,
    notifiable,
    postable_alerts,
    rfc3339,
    truncate,
    v4_alert,
    webhook_v4,
    without_resolved,
)

T0 = 1_788_228_007.0  # 2026-09-01T02:00:07Z
RULE = RuleKey("r.yaml", "g", "EngineDown", "up == 0", ())


def alert(state: AlertState, engine: str = "main", **kw: float) -> Alert:
    labels = make_labels({"alertname": "EngineDown", "engine": engine, "severity": "critical"})
    return Alert(
        rule=RULE,
        labels=labels,
        annotations=(("summary", f"engine {engine} is down"),),
        state=state,
        value=0.0,
        active_at=T0 - 60,
        fired_at=kw.get("fired_at", T0),
        resolved_at=kw.get("resolved_at"),
        last_eval=T0,
    )


def test_rfc3339() -> None:
    assert rfc3339(T0) == "2026-09-01T02:00:07Z"
    assert rfc3339(T0 + 0.25) == "2026-09-01T02:00:07.250Z"


def test_v4_payload_shape() -> None:
    a = alert(AlertState.FIRING)
    b = alert(AlertState.RESOLVED, engine="aux", resolved_at=T0 + 240)
    pending = alert(AlertState.PENDING, engine="p")
    p = webhook_v4(
        receiver="phone",
        group_key='{}:{alertname="EngineDown"}',
        group_labels={"alertname": "EngineDown"},
        alerts=[a, b, pending],
        external_url="http://127.0.0.1:9108",
        generator_url="http://127.0.0.1:9108/alerts",
    )
    assert list(p) == [
        "version", "groupKey", "truncatedAlerts", "status", "receiver", "groupLabels",
        "commonLabels", "commonAnnotations", "externalURL", "alerts",
    ]  # fmt: skip
    assert p["version"] == "4" and p["status"] == "firing" and p["truncatedAlerts"] == 0
    assert p["commonLabels"] == {"alertname": "EngineDown", "severity": "critical"}
    assert p["commonAnnotations"] == {}
    assert len(p["alerts"]) == 2  # pending is never notified
    first, second = p["alerts"]
    assert first == {
        "status": "firing",
        "labels": {"alertname": "EngineDown", "engine": "main", "severity": "critical"},
        "annotations": {"summary": "engine main is down"},
        "startsAt": "2026-09-01T02:00:07Z",
        "endsAt": ZERO_TIME,
        "generatorURL": "http://127.0.0.1:9108/alerts",
        "fingerprint": a.fingerprint,
    }
    assert second["status"] == "resolved" and second["endsAt"] == "2026-09-01T02:04:07Z"
    json.dumps(p)  # JSON-ready


def test_all_resolved_status_and_truncation() -> None:
    alerts = [alert(AlertState.RESOLVED, engine=str(i), resolved_at=T0 + 1) for i in range(5)]
    p = webhook_v4(
        receiver="r", group_key="k", group_labels={}, alerts=alerts,
        external_url="", generator_url="",
    )  # fmt: skip
    assert p["status"] == "resolved"
    cut = truncate(p, 2)
    assert len(cut["alerts"]) == 2 and cut["truncatedAlerts"] == 3
    assert truncate(p, 0)["alerts"] == p["alerts"]
    assert without_resolved(p) is None


def postable_from_alerts(
    alerts: list[Alert], *, now: float, generator_url: str, resend_interval: float = 60.0
) -> list[JSON]:
    """The push body of the notifiable ``alerts``, as the Alertmanager channel builds it."""
    items = [v4_alert(a, generator_url) for a in notifiable(alerts)]
    return postable_alerts(items, now=now, resend_interval=resend_interval)


def test_postable_body() -> None:
    firing = alert(AlertState.FIRING)
    done = alert(AlertState.RESOLVED, engine="aux", resolved_at=T0 + 240)
    body = postable_from_alerts(
        [firing, done], now=T0 + 300, generator_url="http://h/alerts", resend_interval=60
    )
    assert body[0] == {
        "labels": {"alertname": "EngineDown", "engine": "main", "severity": "critical"},
        "annotations": {"summary": "engine main is down"},
        "startsAt": "2026-09-01T02:00:07Z",
        "endsAt": rfc3339(T0 + 300 + 240),
        "generatorURL": "http://h/alerts",
    }
    assert body[1]["endsAt"] == "2026-09-01T02:04:07Z"
