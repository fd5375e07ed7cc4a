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

from inferwatch import __version__
from inferwatch.notify.channels.common import (
    CommonOptions,
    check_secret,
    common_fields,
    parse_duration,
    secret_fields,
)
from inferwatch.notify.channels.http_channel import HttpChannel, Post, secret_or_file
from inferwatch.notify.merge import without_extension

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
        return secret_or_file(self.url, self.url_file)


class WebhookNotifier(HttpChannel[WebhookConfig]):
    """POSTs the v4 payload; one pooled client per instance."""

    integration = "webhook"
    credential = "url_file"

    def request(self, group: Mapping[str, Any], idempotency_key: str | None) -> Post:
        headers = {"Content-Type": "application/json", "User-Agent": f"inferwatch/{__version__}"}
        if idempotency_key:
            headers["Idempotency-Key"] = idempotency_key
        # json.dumps' default (non-ASCII escaped): the bytes webhook receivers have always had
        content = json.dumps(without_extension(group)).encode()
        return Post(self.config.resolve_url(), content, headers)


def webhook_factory(raw: Mapping[str, Any]) -> WebhookNotifier:
    return WebhookNotifier(WebhookConfig.from_mapping(raw))
