"""Folding a group's queued messages into one that replaces them (notify.md §4 "Coalescing").

When a channel is backlogged (receiver down, rate limit, quiet hours), the messages of one group
that are due together leave as one. Nothing is dropped: the merged message holds every alert of
every message it replaces, keyed by (fingerprint, startsAt), the latest version winning, so an
alert that fired and then resolved while queued shows once as resolved ("fired and resolved",
never a stale firing message), and an alert that resolved and fired again shows both episodes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from inferwatch.notify.payload import JSON, _common, group_status

EXTENSION = "inferwatch"
"""Key of inferwatch's own additions to a v4 payload (``merged``, ``queuedAt``); the webhook
channel strips it so bridges see Alertmanager's payload exactly."""


def merge_payloads(payloads: Sequence[Mapping[str, Any]]) -> JSON:
    """One v4 payload carrying every alert of ``payloads`` (oldest first)."""
    if not payloads:
        raise ValueError("nothing to merge")
    latest = payloads[-1]
    by_episode: dict[tuple[str, str], Mapping[str, Any]] = {}
    for payload in payloads:
        for alert in payload.get("alerts", []):
            key = (str(alert.get("fingerprint", "")), str(alert.get("startsAt", "")))
            by_episode.pop(key, None)  # re-insert: order of the latest news
            by_episode[key] = alert
    alerts = sorted(by_episode.values(), key=lambda a: a.get("status") != "firing")
    merged = sum(1 + int(p.get(EXTENSION, {}).get("merged", 0)) for p in payloads) - 1
    out: JSON = dict(latest)
    out["alerts"] = [dict(a) for a in alerts]
    out["status"] = group_status(alerts)
    out["commonLabels"] = _common([a.get("labels", {}) for a in alerts])
    out["commonAnnotations"] = _common([a.get("annotations", {}) for a in alerts])
    out["truncatedAlerts"] = max(int(p.get("truncatedAlerts", 0) or 0) for p in payloads)
    out[EXTENSION] = {**latest.get(EXTENSION, {}), "merged": merged}
    return out


def without_extension(payload: Mapping[str, Any]) -> JSON:
    """The payload as Alertmanager would send it."""
    return {k: v for k, v in payload.items() if k != EXTENSION}


def annotate(payload: Mapping[str, Any], queued_at: float | None, merged: int) -> JSON:
    """Mark a late or merged message so the text can say when it was first queued."""
    if queued_at is None and not merged:
        return dict(payload)
    ext = dict(payload.get(EXTENSION, {}))
    if queued_at is not None:
        ext["queuedAt"] = queued_at
    if merged:
        ext["merged"] = merged
    return {**payload, EXTENSION: ext}
