"""Alert state across a restart: JSON for the active alerts, and Prometheus's restore rules.

Prometheus restores a pending alert's ``for`` timer from ``ALERTS_FOR_STATE`` after a restart
(notify.md §1.1): if the server was down longer than the outage tolerance (1 h) nothing is
restored; rules whose ``for`` is shorter than the grace period (10 min) are not restored; otherwise
the time already spent pending counts, but an alert that would fire within the grace period is
pushed to fire at ``restart + grace``, and the down time itself is added to ``active_at``.

inferwatch does the same for pending alerts, and one thing more for firing ones: a firing alert
restored within the tolerance stays firing with its original times, so the restart neither
re-announces it nor loses its resolution (if its condition is gone at the first evaluation, it
resolves and that is announced).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import replace
from typing import Any, NamedTuple

from inferwatch.alerts.model import Alert, AlertState, RuleKey
from inferwatch.labels import make_labels

VERSION = 1
FOR_OUTAGE_TOLERANCE_S = 3600.0
FOR_GRACE_PERIOD_S = 600.0


class StateError(ValueError):
    """Saved alert state that cannot be read (corrupt or from another version)."""


class RestorePolicy(NamedTuple):
    outage_tolerance_s: float = FOR_OUTAGE_TOLERANCE_S
    grace_period_s: float = FOR_GRACE_PERIOD_S


def _number(v: float | None) -> float | str | None:
    if v is None or math.isfinite(v):
        return v
    return "NaN" if math.isnan(v) else ("+Inf" if v > 0 else "-Inf")


def _float(v: Any, what: str) -> float:
    if isinstance(v, bool) or not isinstance(v, int | float | str):
        raise StateError(f"{what}: not a number: {v!r}")
    try:
        return float(v)
    except ValueError:
        raise StateError(f"{what}: not a number: {v!r}") from None


def _optional(v: Any, what: str) -> float | None:
    return None if v is None else _float(v, what)


def encode(alerts: Iterable[Alert], saved_at: float) -> str:
    """The pending and firing alerts as JSON text."""
    rows = []
    for a in alerts:
        if not a.is_active:
            continue
        rows.append({
            "rule": {"file": a.rule.file, "group": a.rule.group, "name": a.rule.name,
                     "expr": a.rule.expr, "labels": dict(a.rule.labels)},
            "labels": dict(a.labels),
            "annotations": dict(a.annotations),
            "state": a.state.value,
            "value": _number(a.value),
            "active_at": a.active_at,
            "fired_at": a.fired_at,
            "keep_firing_since": a.keep_firing_since,
            "last_eval": a.last_eval,
        })  # fmt: skip
    doc = {"version": VERSION, "saved_at": saved_at, "alerts": rows}
    return json.dumps(doc, sort_keys=True, allow_nan=False)


def _strings(node: Any, what: str) -> dict[str, str]:
    if not isinstance(node, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in node.items()
    ):
        raise StateError(f"{what}: expected a mapping of strings")
    return node


def _alert(row: Any) -> Alert:
    if not isinstance(row, dict) or not isinstance(row.get("rule"), dict):
        raise StateError("alert: expected a mapping with a rule")
    r = row["rule"]
    rule_labels = make_labels(_strings(r.get("labels", {}), "rule labels"))
    key = RuleKey(str(r.get("file", "")), str(r.get("group", "")), str(r.get("name", "")),
                  str(r.get("expr", "")), rule_labels)  # fmt: skip
    try:
        state = AlertState(str(row.get("state")))
    except ValueError:
        raise StateError(f"alert: unknown state {row.get('state')!r}") from None
    if state not in (AlertState.PENDING, AlertState.FIRING):
        raise StateError(f"alert: state {state.value} is not saved")
    return Alert(
        rule=key,
        labels=make_labels(_strings(row.get("labels"), "labels")),
        annotations=tuple(sorted(_strings(row.get("annotations", {}), "annotations").items())),
        state=state,
        value=_float(row.get("value"), "value"),
        active_at=_float(row.get("active_at"), "active_at"),
        fired_at=_optional(row.get("fired_at"), "fired_at"),
        keep_firing_since=_optional(row.get("keep_firing_since"), "keep_firing_since"),
        last_eval=_float(row.get("last_eval", 0.0), "last_eval"),
    )


def decode(text: str) -> tuple[float, list[Alert]]:
    """(saved_at, alerts) from :func:`encode`'s text; raises :class:`StateError`."""
    try:
        doc = json.loads(text)
    except (json.JSONDecodeError, TypeError) as exc:
        raise StateError(f"alert state is not JSON: {exc}") from None
    if not isinstance(doc, dict) or doc.get("version") != VERSION:
        raise StateError("alert state: unknown format or version")
    rows = doc.get("alerts")
    if not isinstance(rows, list):
        raise StateError("alert state: 'alerts' must be a list")
    return _float(doc.get("saved_at"), "saved_at"), [_alert(row) for row in rows]


def restored(
    alert: Alert, ts: float, for_s: float, saved_at: float, policy: RestorePolicy
) -> Alert | None:
    """The alert to put back at the rule's first evaluation ``ts`` after a restart, or None."""
    down_at = alert.last_eval or saved_at
    if ts - down_at > policy.outage_tolerance_s:
        return None
    if alert.state is AlertState.FIRING:
        return alert
    if for_s < policy.grace_period_s:
        return None
    remaining = for_s - (down_at - alert.active_at)
    if remaining <= 0:
        active_at = alert.active_at
    elif remaining < policy.grace_period_s:
        active_at = ts + policy.grace_period_s - for_s
    else:
        active_at = alert.active_at + (ts - down_at)
    return replace(alert, active_at=active_at)
