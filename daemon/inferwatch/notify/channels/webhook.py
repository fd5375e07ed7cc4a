"""The generic webhook, configured exactly as Alertmanager's ``webhook_configs``.

It POSTs the v4 payload unchanged so AM bridges accept it, adds ``Idempotency-Key`` so a receiver
can drop the duplicate an ambiguous retry may cause, and reads ``Retry-After`` on 429/5xx (which
upstream ignores, AM#2121). The URL is a secret (it usually carries a token): it is registered
for redaction and may live in ``url_file``; httpx runs with ``trust_env=False`` so a desktop
``ALL_PROXY`` cannot reroute a loopback sink (notify.md §4.2).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from inferwatch import __version__
from inferwatch.notify.channels.common import (
    CommonOptions,
    check_secret,
    common_fields,
    parse_duration,
    secret_fields,
)
from inferwatch.notify.channels.http_channel import HttpChannel
from inferwatch.notify.merge import without_extension
from inferwatch.notify.retry import Outcome, classify_exception, classify_http
from inferwatch.redact import redact, register_secret

__all__ = ["WebhookConfig", "WebhookNotifier", "parse_duration", "webhook_factory"]


@dataclass(frozen=True, slots=True)
class WebhookConfig(CommonOptions):
    url: str | None = None
    url_file: Path | None = None

    def __post_init__(self) -> None:
        check_secret("webhook", "url", self.url, self.url_file)
        if self.max_alerts < 0:
            raise ValueError("webhook: max_alerts must be >= 0")

    @classmethod
    def from_mapping(cls, raw: Mapping[str, Any]) -> WebhookConfig:
        return cls(**secret_fields(raw, "url"), **common_fields(raw))

    def resolve_url(self) -> str:
        """The URL, reading ``url_file`` at send time so a rotated token needs no reload."""
        if self.url is not None:
            return self.url
        assert self.url_file is not None
        url = self.url_file.read_text(encoding="utf-8").strip()
        register_secret(url)
        return url


class WebhookNotifier(HttpChannel[WebhookConfig]):
    """POSTs the v4 payload; one pooled client per instance."""

    integration = "webhook"

    async def notify(
        self, payload: Mapping[str, Any], idempotency_key: str | None = None
    ) -> Outcome:
        body = self._group(payload)
        if body is None:
            return Outcome.ok()  # nothing to say: a resolved-only group, resolved muted
        data = without_extension(body)
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


def webhook_factory(raw: Mapping[str, Any]) -> WebhookNotifier:
    return WebhookNotifier(WebhookConfig.from_mapping(raw))
