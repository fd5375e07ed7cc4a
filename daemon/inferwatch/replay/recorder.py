"""A replay writer that also keeps what it wrote about (events of the event log and alert
transitions), for ``replay --report``; the usual output is written unchanged."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

from inferwatch.event import Event
from inferwatch.replay.output import Writer, event_doc

_ROW_KEYS = ("kind", "at", "type", "source", "line")


class RecordingWriter(Writer):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.events: list[dict[str, Any]] = []
        self.alerts: list[dict[str, Any]] = []

    def event(self, event: Event) -> None:
        super().event(event)
        doc = event_doc(event, self.tz, "")
        self.events.append(
            {
                "at": event.at,
                "type": event.type,
                "source": event.source,
                "line": event.line,
                "labels": dict(event.labels),
                "details": {k: v for k, v in doc.items() if k not in _ROW_KEYS},
            }
        )

    def alert(self, doc: Mapping[str, Any]) -> None:
        super().alert(doc)
        self.alerts.append({**doc, "at_s": seconds(str(doc.get("at", "")))})


def seconds(text: str) -> float | None:
    """The writer's time back to seconds: ISO 8601 with offset, or ``PT…S`` since boot."""
    if text.startswith("PT") and text.endswith("S"):
        return float(text[2:-1])
    try:
        return dt.datetime.fromisoformat(text).timestamp()
    except ValueError:
        return None


__all__ = ["RecordingWriter", "seconds"]
