"""Readable text for ``inferwatch status`` and ``inferwatch events`` (``--json`` prints the raw
documents instead). Pure functions of the API's documents; times in UTC."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from inferwatch.durations import format_duration_ms

STATE_ORDER = {"firing": 0, "pending": 1, "resolved": 2}


def when(ts: object) -> str:
    if not isinstance(ts, int | float) or isinstance(ts, bool):
        return "never"
    try:
        return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    except (OverflowError, OSError, ValueError):
        return repr(ts)


def age(seconds: float) -> str:
    return format_duration_ms(max(0, int(seconds)) * 1000)


def status_lines(status: Mapping[str, Any], alerts: Mapping[str, Any], now: float) -> list[str]:
    """The summary: who and where, problems first, then alerts, sources, rules, outbox."""
    started = status.get("started_at")
    up = f", up {age(now - started)}" if isinstance(started, int | float) else ""
    out = [
        f"inferwatch {status.get('version', '?')} (pid {status.get('pid', '?')}{up}) "
        f"on {status.get('listen', '?')}",
        f"config: {status.get('config') or 'embedded defaults'}; "
        f"state: {status.get('state_dir', '?')}",
    ]
    problems = status.get("problems") or []
    out.append(f"problems: {len(problems)}" if problems else "problems: none")
    out += [f"  ! {p}" for p in problems]
    out += _alert_lines(alerts)
    out.append("sources:")
    for name, health in sorted((status.get("sources") or {}).items()):
        h = health if isinstance(health, Mapping) else {}
        why = h.get("reason") or h.get("last_error") or ""
        out.append(f"  {name:<28} {h.get('state', '?'):<9} {why}".rstrip())
    for item in status.get("disabled") or []:
        out.append(f"  {item} (disabled)")
    rules = status.get("rules") or {}
    out.append(
        f"rules: {rules.get('groups', 0)} groups from {len(rules.get('files') or [])} files"
        + (f", {len(rules['problems'])} problems" if rules.get("problems") else "")
    )
    out += [f"  ! {p}" for p in rules.get("problems") or []]
    out += _notify_lines(status.get("notify"))
    out.append(f"last snapshot: {when(status.get('last_snapshot'))}")
    return out


def _alert_lines(doc: Mapping[str, Any]) -> list[str]:
    alerts = [a for a in doc.get("alerts") or [] if isinstance(a, Mapping)]
    live = [a for a in alerts if a.get("state") in ("firing", "pending")]
    if not live:
        return ["alerts: none firing or pending"]
    live.sort(key=lambda a: (STATE_ORDER.get(str(a.get("state")), 9), -(a.get("activeAt") or 0)))
    out = [f"alerts: {len(live)}"]
    for a in live:
        labels = a.get("labels") or {}
        summary = (a.get("annotations") or {}).get("summary", "")
        rest = ",".join(f"{k}={v}" for k, v in sorted(labels.items()) if k != "alertname")
        out.append(
            f"  {a.get('state', '?'):<8} {labels.get('alertname', '?')}"
            f"{{{rest}}} since {when(a.get('firedAt') or a.get('activeAt'))}"
            + (f": {summary}" if summary else "")
        )
    return out


def _notify_lines(notify: object) -> list[str]:
    if not isinstance(notify, Mapping):
        return ["notifications: not running"]
    oldest = notify.get("outbox_oldest_pending_at")
    out = [
        f"outbox: {notify.get('outbox_pending', 0)} pending"
        + (f", oldest {when(oldest)}" if oldest else "")
    ]
    for name, last in sorted((notify.get("last_attempts") or {}).items()):
        out.append(f"  {name}: {json.dumps(last, sort_keys=True)[:160]}")
    return out


def event_line(row: Mapping[str, Any]) -> str:
    """One event: time, type, the labels that say where, then the details."""
    labels = row.get("labels") or {}
    where = ",".join(f"{k}={v}" for k, v in sorted(labels.items()))
    details = row.get("details") or {}
    brief = " ".join(
        f"{k}={json.dumps(v, ensure_ascii=False)}"
        for k, v in sorted(details.items())
        if k != "labels" and not isinstance(v, dict | list)
    )
    return f"{when(row.get('at'))}  {row.get('type', '?'):<16} {where}  {brief}".rstrip()


__all__ = ["event_line", "status_lines"]
