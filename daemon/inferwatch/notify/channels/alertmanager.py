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

import httpx

from inferwatch import __version__
from inferwatch.clock import SYSTEM_CLOCK, Clock
from inferwatch.notify.channels.common import parse_duration
from inferwatch.notify.payload import FIRING, postable_alerts
from inferwatch.notify.retry import Outcome, classify_exception, classify_http
from inferwatch.redact import redact, register_secret

API_PATH = "/api/v2/alerts"


@dataclass(frozen=True, slots=True)
class AlertmanagerConfig:
    url: str
    timeout: float = 10.0
    resend_interval: float = 60.0
    resolved_retention: float = 900.0
    proxy_url: str | None = None

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
        )

    @property
    def endpoint(self) -> str:
        return self.url.rstrip("/") + API_PATH


class AlertmanagerNotifier:
    """Remembers what it pushed (by fingerprint) so :meth:`resend` can keep AM up to date."""

    integration = "alertmanager"

    def __init__(self, config: AlertmanagerConfig, clock: Clock = SYSTEM_CLOCK) -> None:
        self.config = config
        self.clock = clock
        self._client: httpx.AsyncClient | None = None
        # fingerprint -> (v4 alert dict, when it was first seen resolved or None)
        self._known: dict[str, tuple[Mapping[str, Any], float | None]] = {}

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = httpx.AsyncClient(
                trust_env=False, proxy=self.config.proxy_url, timeout=self.config.timeout
            )
        return self._client

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

    async def notify(
        self, payload: Mapping[str, Any], idempotency_key: str | None = None
    ) -> Outcome:
        """Post the payload's alerts (the key is unused: AM dedups on labels)."""
        items = list(payload.get("alerts", []))
        self._remember(items, self.clock.time())
        return await self._post(items)

    async def resend(self) -> Outcome:
        """Re-post every tracked alert; a no-op (ok) when nothing is tracked."""
        return await self._post(self.tracked())

    async def _post(self, items: list[Mapping[str, Any]]) -> Outcome:
        if not items:
            return Outcome.ok()
        now = self.clock.time()
        body = postable_alerts(items, now=now, resend_interval=self.config.resend_interval)
        headers = {"Content-Type": "application/json", "User-Agent": f"inferwatch/{__version__}"}
        try:
            resp = await self._http().post(
                self.config.endpoint, content=json.dumps(body), headers=headers
            )
        except httpx.HTTPError as exc:
            return classify_exception(exc)
        outcome = classify_http(resp.status_code, resp.content, resp.headers, now)
        if outcome.reason:
            reason = redact(f"alertmanager: {outcome.reason}: {resp.text[:200]}")
            return Outcome(outcome.kind, reason, outcome.retry_after, outcome.status)
        return outcome

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None


def alertmanager_factory(raw: Mapping[str, Any]) -> AlertmanagerNotifier:
    return AlertmanagerNotifier(AlertmanagerConfig.from_mapping(raw))
