"""Wire bodies shared with the Alertmanager ecosystem.

:func:`webhook_v4` builds Alertmanager's webhook payload version 4 so every existing AM bridge
(DingTalk, WeCom, PrometheusAlert...) accepts inferwatch unchanged; :func:`postable_alerts` builds
the ``POST /api/v2/alerts`` body for pushing into a real Alertmanager. Both are plain JSON-ready
dicts so they can sit in the outbox as text and be rebuilt after a restart.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from inferwatch.alerts.model import Alert, AlertState

VERSION = "4"
ZERO_TIME = "0001-01-01T00:00:00Z"
"""Go's zero ``time.Time``: what Alertmanager puts in ``endsAt`` of an unresolved alert."""
FIRING = "firing"
RESOLVED = "resolved"

JSON = dict[str, Any]


def rfc3339(ts: float) -> str:
    """UTC RFC 3339 with a ``Z``; milliseconds only when the time has a fraction."""
    when = datetime.fromtimestamp(ts, UTC)
    spec = "seconds" if when.microsecond == 0 else "milliseconds"
    return when.isoformat(timespec=spec).replace("+00:00", "Z")


def alert_status(alert: Alert) -> str:
    """Pending alerts are never notified; callers filter them (see :func:`notifiable`)."""
    return FIRING if alert.state in (AlertState.FIRING, AlertState.PENDING) else RESOLVED


def notifiable(alerts: Iterable[Alert]) -> list[Alert]:
    """Alerts that belong in a notification: firing or resolved, not pending or never-fired."""
    return [a for a in alerts if a.state in (AlertState.FIRING, AlertState.RESOLVED)]


def v4_alert(alert: Alert, generator_url: str) -> JSON:
    status = alert_status(alert)
    starts = alert.fired_at if alert.fired_at is not None else alert.active_at
    ends = ZERO_TIME
    if status == RESOLVED:
        ends = rfc3339(alert.resolved_at if alert.resolved_at is not None else alert.last_eval)
    return {
        "status": status,
        "labels": dict(alert.labels),
        "annotations": dict(alert.annotations),
        "startsAt": rfc3339(starts),
        "endsAt": ends,
        "generatorURL": generator_url,
        "fingerprint": alert.fingerprint,
    }


def _common(maps: Sequence[Mapping[str, str]]) -> dict[str, str]:
    if not maps:
        return {}
    first = maps[0]
    return {k: v for k, v in first.items() if all(m.get(k) == v for m in maps[1:])}


def webhook_v4(
    *,
    receiver: str,
    group_key: str,
    group_labels: Mapping[str, str],
    alerts: Sequence[Alert],
    external_url: str,
    generator_url: str,
) -> JSON:
    """The full v4 payload (``truncatedAlerts`` 0); channels apply ``max_alerts`` themselves."""
    items = [v4_alert(a, generator_url) for a in notifiable(alerts)]
    return {
        "version": VERSION,
        "groupKey": group_key,
        "truncatedAlerts": 0,
        "status": group_status(items),
        "receiver": receiver,
        "groupLabels": dict(group_labels),
        "commonLabels": _common([i["labels"] for i in items]),
        "commonAnnotations": _common([i["annotations"] for i in items]),
        "externalURL": external_url,
        "alerts": items,
    }


def group_status(items: Iterable[Mapping[str, Any]]) -> str:
    return FIRING if any(i.get("status") == FIRING for i in items) else RESOLVED


def truncate(payload: Mapping[str, Any], max_alerts: int) -> JSON:
    """Keep the first ``max_alerts`` alerts (0 = all), counting the rest in ``truncatedAlerts``;
    status and common labels still describe the whole group, as upstream."""
    out = dict(payload)
    alerts = list(payload.get("alerts", []))
    if max_alerts > 0 and len(alerts) > max_alerts:
        out["alerts"] = alerts[:max_alerts]
        out["truncatedAlerts"] = int(payload.get("truncatedAlerts", 0)) + len(alerts) - max_alerts
    return out


def without_resolved(payload: Mapping[str, Any]) -> JSON | None:
    """For ``send_resolved: false``: drop resolved alerts; ``None`` when nothing is left."""
    kept = [a for a in payload.get("alerts", []) if a.get("status") == FIRING]
    if not kept:
        return None
    return {**payload, "alerts": kept}


def postable_alerts(
    items: Iterable[Mapping[str, Any]], *, now: float, resend_interval: float = 60.0
) -> list[JSON]:
    """``POST /api/v2/alerts`` body from v4 alert dicts. Firing alerts end at now + 4 resend
    intervals so Alertmanager resolves them on its own if inferwatch dies; resolved alerts
    keep their real end (never later than ``now``)."""
    body: list[JSON] = []
    for item in items:
        ends = item.get("endsAt", ZERO_TIME)
        if item.get("status") == FIRING or ends == ZERO_TIME:
            ends = rfc3339(now + 4 * resend_interval)
        entry: JSON = {
            "labels": dict(item["labels"]),
            "annotations": dict(item.get("annotations", {})),
            "startsAt": item["startsAt"],
            "endsAt": ends,
        }
        if item.get("generatorURL"):
            entry["generatorURL"] = item["generatorURL"]
        body.append(entry)
    return body
