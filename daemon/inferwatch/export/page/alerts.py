"""Alerts as the page shows them: firing before pending, most severe and newest first, with
the annotations in the page's language."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from inferwatch.export.page.samples import stamp

SEVERITY_ORDER = {"critical": 0, "warning": 1, "info": 2}


@dataclass(frozen=True, slots=True)
class AlertView:
    name: str
    state: str
    severity: str
    since: str
    summary: str
    diagnosis: str
    action: str
    labels: str
    muted_by: tuple[str, ...] = ()  # the active silences (matchers) that mute it


def annotation(annotations: Mapping[str, str], key: str, language: str) -> str:
    """``summary_zh`` (etc.) under ``language: zh`` when the rule carries one."""
    if language != "en":
        localised = annotations.get(f"{key}_{language}")
        if localised:
            return str(localised)
    return str(annotations.get(key, ""))


def alert_views(alerts: Sequence[Mapping[str, Any]], language: str) -> list[AlertView]:
    """Firing first, then pending; by severity, newest first within each."""
    live = [a for a in alerts if a.get("state") in ("firing", "pending")]
    live.sort(
        key=lambda a: (
            a.get("state") != "firing",
            SEVERITY_ORDER.get(str(a.get("labels", {}).get("severity", "")), 9),
            -float(a.get("activeAt") or 0.0),
        )
    )
    out = []
    for a in live:
        labels: Mapping[str, str] = a.get("labels", {})
        notes: Mapping[str, str] = a.get("annotations", {})
        shown = {k: v for k, v in labels.items() if k not in ("alertname", "severity")}
        out.append(
            AlertView(
                name=str(labels.get("alertname", "")),
                state=str(a.get("state")),
                severity=str(labels.get("severity", "")),
                since=stamp(a.get("firedAt") or a.get("activeAt")),
                summary=annotation(notes, "summary", language),
                diagnosis=annotation(notes, "diagnosis", language),
                action=annotation(notes, "action", language),
                labels=", ".join(f"{k}={v}" for k, v in sorted(shown.items())),
            )
        )
    return out


__all__ = ["AlertView", "alert_views", "annotation"]
