"""The console receiver: one phone-sized message per group into the daemon's log (journald).

The embedded default route sends everything here, so a host with no chat channel configured
still records what it would have told its owner: one record per alert, or, when the entry sets
its own ``title``/``message`` templates, one record per group with their text.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from inferwatch.logsetup import get_logger
from inferwatch.notify.channels.templating import MessageTemplates, render_message
from inferwatch.notify.payload import without_resolved
from inferwatch.notify.retry import Outcome

log = get_logger("inferwatch.notify.console")


class ConsoleNotifier:
    integration = "console"

    def __init__(self, config: Mapping[str, Any]) -> None:
        self.send_resolved = bool(config.get("send_resolved", True))
        self.templates = MessageTemplates.from_mapping(config, "console")

    async def notify(
        self, payload: Mapping[str, Any], idempotency_key: str | None = None
    ) -> Outcome:
        if self.templates.title or self.templates.message:
            group = payload if self.send_resolved else without_resolved(payload)
            if group is not None:
                msg = render_message(self.templates, group)
                log.warning("notification", receiver=payload.get("receiver"),
                            status=group.get("status"), severity=msg.severity, title=msg.title,
                            message=msg.body, key=idempotency_key)  # fmt: skip
            return Outcome.ok()
        for alert in payload.get("alerts", []):
            if alert.get("status") == "resolved" and not self.send_resolved:
                continue
            labels = alert.get("labels", {})
            notes = alert.get("annotations", {})
            log.warning(
                "notification",
                receiver=payload.get("receiver"),
                status=alert.get("status"),
                severity=labels.get("severity", ""),
                alertname=labels.get("alertname", ""),
                summary=notes.get("summary", ""),
                diagnosis=notes.get("diagnosis", ""),
                action=notes.get("action", ""),
                starts_at=alert.get("startsAt"),
                key=idempotency_key,
            )
        return Outcome.ok()

    async def aclose(self) -> None:
        return None


def console_factory(config: Mapping[str, Any]) -> ConsoleNotifier:
    return ConsoleNotifier(config)
