"""Telling someone that a message could not be delivered (notify.md §4 "Fallback").

When a row is dead-lettered (a permanent failure such as a revoked key, or its deadline passed
while the receiver stayed down), the fallback receiver gets one message, committed in the same
transaction as the dead-lettering: a synthetic ``InferwatchNotificationUndelivered`` alert naming
the receiver, integration and reason, followed by the alerts of the message that was lost, so the
content itself still reaches a phone. Its severity is the lost message's highest (a critical page
that could not be delivered pages through the fallback). The fallback's own dead letters are not
announced again (no loop); they stay visible in metrics, ``status`` and the outbox.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

from inferwatch.notify.merge import EXTENSION
from inferwatch.notify.message import top_severity
from inferwatch.notify.outbox import Announce, NewRow, OutboxRow
from inferwatch.notify.payload import JSON, ZERO_TIME, rfc3339

ALERTNAME = "InferwatchNotificationUndelivered"


def undelivered_payload(row: OutboxRow, reason: str, fallback: str) -> JSON:
    original: Sequence[Mapping[str, Any]] = row.payload.get("alerts", [])
    severity = top_severity(row.payload)
    labels = {
        "alertname": ALERTNAME,
        "severity": "warning" if severity == "resolved" else severity,
        "receiver": row.receiver,
        "integration": row.integration,
        "fallback": "true",
    }
    names = sorted({str(a.get("labels", {}).get("alertname", "")) for a in original})
    head = {
        "status": "firing",
        "labels": labels,
        "annotations": {
            "summary": f"A notification to {row.receiver}/{row.integration} was not delivered",
            "diagnosis": reason,
            "action": "Check that receiver's URL, key and reachability; the alerts follow.",
            "summary_zh": f"发往 {row.receiver}/{row.integration} 的一条通知未能送达",
            "action_zh": "检查该接收方的 URL、key 和网络连通性；未送达的告警附在后面。",
            "description": f"Alerts: {', '.join(n for n in names if n) or 'none'}",
        },
        "startsAt": rfc3339(row.created_at),
        "endsAt": ZERO_TIME,
        "generatorURL": "",
        "fingerprint": hashlib.sha256(row.key.encode()).hexdigest()[:16],
    }
    return {
        "version": "4",
        "groupKey": f"undelivered:{row.receiver}",
        "truncatedAlerts": 0,
        "status": "firing",
        "receiver": fallback,
        "groupLabels": {"alertname": ALERTNAME},
        "commonLabels": {},
        "commonAnnotations": {},
        "externalURL": str(row.payload.get("externalURL", "")),
        "alerts": [head, *(dict(a) for a in original)],
        EXTENSION: {"queuedAt": row.created_at},
    }


def announcer(fallback: str | None, integrations: Mapping[str, Sequence[str]]) -> Announce | None:
    """The outbox's dead-letter hook, or None without a fallback receiver."""
    if not fallback:
        return None
    targets = tuple(integrations.get(fallback, ()))

    def announce(row: OutboxRow, reason: str) -> list[NewRow]:
        if row.receiver == fallback:
            return []
        payload = undelivered_payload(row, reason, fallback)
        return [
            NewRow(
                key=hashlib.sha256(f"undelivered\x1f{row.key}\x1f{i}".encode()).hexdigest()[:32],
                receiver=fallback,
                integration=i,
                group_key=f"undelivered:{row.receiver}",
                payload=payload,
            )
            for i in targets
        ]

    return announce
