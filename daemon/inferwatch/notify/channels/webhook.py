"""The generic webhook, configured exactly as Alertmanager's ``webhook_configs``.

It POSTs the v4 payload unchanged so AM bridges accept it, adds ``Idempotency-Key`` so a receiver
can drop the duplicate an ambiguous retry may cause, and reads ``Retry-After`` on 429/5xx (which
upstream ignores, AM#2121). The URL is a secret (it usually carries a token): it is registered
for redaction and may live in ``url_file``; httpx runs with ``trust_env=False`` so a desktop
``ALL_PROXY`` cannot reroute a loopback sink (notify.md §4.2).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from inferwatch import __version__
from inferwatch.clock import SYSTEM_CLOCK, Clock
from inferwatch.notify.merge import without_extension
from inferwatch.notify.payload import truncate, without_resolved
from inferwatch.notify.retry import Outcome, classify_exception, classify_http
from inferwatch.redact import redact, register_secret

_DURATION = re.compile(r"^(\d+(?:\.\d+)?)(ms|s|m|h)?$")
_UNIT = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}


def parse_duration(value: object, default: float) -> float:
    """Seconds from a number or a Prometheus-style ``10s``/``500ms``/``1m``."""
    if value is None:
        return default
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    m = _DURATION.match(str(value).strip())
    if m is None:
        raise ValueError(f"bad duration {value!r}")
    return float(m.group(1)) * _UNIT[m.group(2)]


@dataclass(frozen=True, slots=True)
class WebhookConfig:
    url: str | None = None
    url_file: Path | None = None
    send_resolved: bool = True
    max_alerts: int = 0
    proxy_url: str | None = None
    timeout: float = 10.0

    def __post_init__(self) -> None:
        if (self.url is None) == (self.url_file is None):
            raise ValueError("webhook: exactly one of url and url_file must be set")
        if self.max_alerts < 0:
            raise ValueError("webhook: max_alerts must be >= 0")
        if self.url is not None:
            register_secret(self.url)

    @classmethod
    def from_mapping(cls, raw: Mapping[str, Any]) -> WebhookConfig:
        http = raw.get("http_config") or {}
        url_file = raw.get("url_file")
        return cls(
            url=raw.get("url"),
            url_file=Path(url_file) if url_file else None,
            send_resolved=bool(raw.get("send_resolved", True)),
            max_alerts=int(raw.get("max_alerts", 0)),
            proxy_url=http.get("proxy_url"),
            timeout=parse_duration(raw.get("timeout", http.get("timeout")), 10.0),
        )

    def resolve_url(self) -> str:
        """The URL, reading ``url_file`` at send time so a rotated token needs no reload."""
        if self.url is not None:
            return self.url
        assert self.url_file is not None
        url = self.url_file.read_text(encoding="utf-8").strip()
        register_secret(url)
        return url


class WebhookNotifier:
    """POSTs the v4 payload; one pooled client per instance."""

    integration = "webhook"

    def __init__(self, config: WebhookConfig, clock: Clock = SYSTEM_CLOCK) -> None:
        self.config = config
        self.clock = clock
        self._client: httpx.AsyncClient | None = None

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = httpx.AsyncClient(
                trust_env=False, proxy=self.config.proxy_url, timeout=self.config.timeout
            )
        return self._client

    async def notify(
        self, payload: Mapping[str, Any], idempotency_key: str | None = None
    ) -> Outcome:
        body = payload if self.config.send_resolved else without_resolved(payload)
        if body is None:
            return Outcome.ok()  # nothing to say: a resolved-only group, resolved muted
        data = without_extension(truncate(body, self.config.max_alerts))
        headers = {"Content-Type": "application/json", "User-Agent": f"inferwatch/{__version__}"}
        if idempotency_key:
            headers["Idempotency-Key"] = idempotency_key
        try:
            url = self.config.resolve_url()
            resp = await self._http().post(url, content=json.dumps(data), headers=headers)
        except OSError as exc:  # url_file unreadable: retry, the file may come back
            return Outcome.retry(f"webhook: url_file: {exc}")
        except httpx.HTTPError as exc:
            return classify_exception(exc)
        outcome = classify_http(resp.status_code, resp.content, resp.headers, self.clock.time())
        if outcome.reason:
            snippet = redact(resp.text[:200])
            reason = f"webhook: {outcome.reason}: {snippet}" if snippet else outcome.reason
            return Outcome(outcome.kind, redact(reason), outcome.retry_after, outcome.status)
        return outcome

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None


def webhook_factory(raw: Mapping[str, Any]) -> WebhookNotifier:
    return WebhookNotifier(WebhookConfig.from_mapping(raw))
