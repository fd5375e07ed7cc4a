"""Pushing inferwatch's alerts into a real Alertmanager (``POST /api/v2/alerts``).

Alertmanager keeps alerts in memory only and expects clients to keep re-sending them (notify.md
§2.7, AM#2370): firing alerts go out with ``endsAt`` = now + 4 resend intervals, so AM resolves
them itself if inferwatch dies; resolved alerts carry their real end and are re-sent for
``resolved_retention`` (15 min, as Prometheus) in case AM restarted in between. :meth:`resend`
is called by the scheduler every ``resend_interval``; posting is idempotent (labels identify).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from inferwatch import __version__
from inferwatch.clock import SYSTEM_CLOCK, Clock
from inferwatch.notify.channels.common import CommonOptions, parse_duration
from inferwatch.notify.channels.http_channel import HttpChannel, Post
from inferwatch.notify.channels.httpconfig import parse_http_config
from inferwatch.notify.payload import FIRING, postable_alerts
from inferwatch.notify.retry import Outcome
from inferwatch.redact import register_secret

API_PATH = "/api/v2/alerts"


@dataclass(frozen=True, slots=True)
class AlertmanagerConfig(CommonOptions):
    """Of the common keys only ``timeout`` and ``http_config`` (without ``timeout``) are read:
    ``send_resolved`` and ``max_alerts`` keep their defaults, since Alertmanager resolves its
    copy of an alert only when told and groups and cuts messages itself."""

    url: str
    resend_interval: float = 60.0
    resolved_retention: float = 900.0

    def __post_init__(self) -> None:
        if not self.url.startswith(("http://", "https://")):
            raise ValueError("alertmanager: url must be http:// or https://")
        register_secret(self.url)

    @classmethod
    def from_mapping(cls, raw: Mapping[str, Any]) -> AlertmanagerConfig:
        http = raw.get("http_config") or {}
        return cls(
            url=str(raw["url"]),
            timeout=parse_duration(raw.get("timeout"), 10.0),
            resend_interval=parse_duration(raw.get("resend_interval"), 60.0),
            resolved_retention=parse_duration(raw.get("resolved_retention"), 900.0),
            proxy_url=http.get("proxy_url"),
            http=parse_http_config(http),
        )

    @property
    def endpoint(self) -> str:
        return self.url.rstrip("/") + API_PATH


class AlertmanagerNotifier(HttpChannel[AlertmanagerConfig]):
    """Remembers what it pushed (by fingerprint) so :meth:`resend` can keep AM up to date."""

    integration = "alertmanager"

    def __init__(self, config: AlertmanagerConfig, clock: Clock = SYSTEM_CLOCK) -> None:
        super().__init__(config, clock)
        # fingerprint -> (v4 alert dict, when it was first seen resolved or None)
        self._known: dict[str, tuple[Mapping[str, Any], float | None]] = {}

    def _remember(self, items: list[Mapping[str, Any]], now: float) -> None:
        for item in items:
            key = str(item.get("fingerprint") or sorted(item["labels"].items()))
            if item.get("status") == FIRING:
                self._known[key] = (item, None)
            else:
                old = self._known.get(key)
                since = old[1] if old is not None and old[1] is not None else now
                self._known[key] = (item, since)

    def tracked(self) -> list[Mapping[str, Any]]:
        """The alerts :meth:`resend` would post now (firing, and recently resolved)."""
        horizon = self.clock.time() - self.config.resolved_retention
        for key, (_item, since) in list(self._known.items()):
            if since is not None and since < horizon:
                del self._known[key]
        return [item for item, _since in self._known.values()]

    def select(self, payload: Mapping[str, Any]) -> Mapping[str, Any] | None:
        """Every alert of the payload, remembered for :meth:`resend`; None when there is none
        (the idempotency key is unused: AM dedups on labels)."""
        items = list(payload.get("alerts", []))
        self._remember(items, self.clock.time())
        return {"alerts": items} if items else None

    async def resend(self) -> Outcome:
        """Re-post every tracked alert; a no-op (ok) when nothing is tracked."""
        items = self.tracked()
        return await self.deliver({"alerts": items}, None) if items else Outcome.ok()

    def request(self, group: Mapping[str, Any], idempotency_key: str | None) -> Post:
        body = postable_alerts(
            group["alerts"], now=self.clock.time(), resend_interval=self.config.resend_interval
        )
        headers = {"Content-Type": "application/json", "User-Agent": f"inferwatch/{__version__}"}
        return Post(self.config.endpoint, json.dumps(body).encode(), headers)


def alertmanager_factory(raw: Mapping[str, Any]) -> AlertmanagerNotifier:
    return AlertmanagerNotifier(AlertmanagerConfig.from_mapping(raw))
