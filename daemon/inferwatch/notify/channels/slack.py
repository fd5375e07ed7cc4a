"""Slack incoming webhook, configured as Alertmanager's ``slack_configs``.

The hook URL (``hooks.slack.com/services/T…/B…/<token>``) is the credential: it and its token
segment are registered for redaction, and it may live in ``api_url_file``. The message is
``mrkdwn`` text (``&``, ``<``, ``>`` escaped, so log text cannot forge a ``<!channel>`` ping).
Success is 200 with body ``ok``; errors come as plain text (notify.md §3.9): 400
``invalid_payload``/``no_text``, 403, 404, 410 are permanent; 429 waits for ``Retry-After`` (we
never send early: Slack may disable an app that ignores its rate limit); 5xx retry.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast
from urllib.parse import urlsplit

import httpx

from inferwatch.notify.channels.http_channel import HttpChannel, secret_or_file
from inferwatch.notify.channels.webhook import parse_duration
from inferwatch.notify.message import Language, render
from inferwatch.notify.payload import truncate
from inferwatch.notify.retry import Outcome, classify_exception, classify_http
from inferwatch.redact import redact, register_secret

LIMIT = 3500  # characters; Slack truncates long texts, keep the whole message visible


def register_url(url: str) -> None:
    """The URL and its token segment: an error body may echo the path without the host."""
    register_secret(url)
    register_secret(urlsplit(url).path.rstrip("/").rsplit("/", 1)[-1])


def mrkdwn_escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


@dataclass(frozen=True, slots=True)
class SlackConfig:
    api_url: str | None = None
    api_url_file: Path | None = None
    channel: str | None = None
    username: str | None = None
    language: Language = "en"
    send_resolved: bool = True
    max_alerts: int = 0
    proxy_url: str | None = None
    timeout: float = 10.0

    def __post_init__(self) -> None:
        if (self.api_url is None) == (self.api_url_file is None):
            raise ValueError("slack: exactly one of api_url and api_url_file must be set")
        if self.api_url is not None:
            register_url(self.api_url)

    @classmethod
    def from_mapping(cls, raw: Mapping[str, Any]) -> SlackConfig:
        http = raw.get("http_config") or {}
        url_file = raw.get("api_url_file")
        return cls(
            api_url=raw.get("api_url"),
            api_url_file=Path(url_file) if url_file else None,
            channel=raw.get("channel"),
            username=raw.get("username"),
            language=cast(Language, raw.get("language", "en")),
            send_resolved=bool(raw.get("send_resolved", True)),
            max_alerts=int(raw.get("max_alerts", 0)),
            proxy_url=http.get("proxy_url"),
            timeout=parse_duration(raw.get("timeout", http.get("timeout")), 10.0),
        )

    def resolve_url(self) -> str:
        return secret_or_file(self.api_url, self.api_url_file, register_url)


def build_body(config: SlackConfig, payload: Mapping[str, Any]) -> dict[str, Any]:
    msg = render(payload, language=config.language, style="text", limit=LIMIT, unit="chars")
    text = f"*{mrkdwn_escape(msg.title)}*\n{mrkdwn_escape(msg.body)}"
    body: dict[str, Any] = {"text": text, "mrkdwn": True}
    if config.channel:
        body["channel"] = config.channel
    if config.username:
        body["username"] = config.username
    return body


class SlackNotifier(HttpChannel[SlackConfig]):
    integration = "slack"

    async def notify(
        self, payload: Mapping[str, Any], idempotency_key: str | None = None
    ) -> Outcome:
        group = self._group(payload)
        if group is None:
            return Outcome.ok()
        body = build_body(self.config, truncate(group, self.config.max_alerts))
        try:
            resp = await self._http().post(
                self.config.resolve_url(),
                content=json.dumps(body, ensure_ascii=False).encode("utf-8"),
                headers={"Content-Type": "application/json"},
            )
        except OSError as exc:
            return Outcome.retry(f"slack: api_url_file: {type(exc).__name__}")
        except httpx.HTTPError as exc:
            return classify_exception(exc)
        out = classify_http(resp.status_code, resp.content, resp.headers, self.clock.time())
        if not out.reason:
            return out
        reason = redact(f"slack: {out.reason}: {resp.text[:200]}")
        return Outcome(out.kind, reason, out.retry_after, out.status)


def slack_factory(raw: Mapping[str, Any]) -> SlackNotifier:
    return SlackNotifier(SlackConfig.from_mapping(raw))
