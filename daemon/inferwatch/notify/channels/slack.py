"""Slack incoming webhook, configured as Alertmanager's ``slack_configs``.

The hook URL (``hooks.slack.com/services/T…/B…/<token>``) is the credential: it and its token
segment are registered for redaction, and it may live in ``api_url_file``. The message is
``mrkdwn`` text (``&``, ``<``, ``>`` escaped, so log text cannot forge a ``<!channel>`` ping;
a receiver's own ``title`` and ``text``/``message`` templates are its mrkdwn, sent as written).
Success is 200 with body ``ok``; errors come as plain text (notify.md §3.9): 400
``invalid_payload``/``no_text``, 403, 404, 410 are permanent; 429 waits for ``Retry-After`` (we
never send early: Slack may disable an app that ignores its rate limit); 5xx retry.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from inferwatch.notify.channels.common import ChatOptions, chat_fields, check_secret, secret_fields
from inferwatch.notify.channels.http_channel import HttpChannel, Post, json_post, secret_or_file
from inferwatch.redact import register_secret

LIMIT = 3500  # characters; Slack truncates long texts, keep the whole message visible


def register_url(url: str) -> None:
    """The URL and its token segment: an error body may echo the path without the host."""
    register_secret(url)
    register_secret(urlsplit(url).path.rstrip("/").rsplit("/", 1)[-1])


def mrkdwn_escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


@dataclass(frozen=True, slots=True)
class SlackConfig(ChatOptions):
    api_url: str | None = None
    api_url_file: Path | None = None
    channel: str | None = None
    username: str | None = None

    def __post_init__(self) -> None:
        check_secret("slack", "api_url", self.api_url, self.api_url_file, register=register_url)

    @classmethod
    def from_mapping(cls, raw: Mapping[str, Any]) -> SlackConfig:
        return cls(
            **secret_fields(raw, "api_url"),
            channel=raw.get("channel"),
            username=raw.get("username"),
            **chat_fields(raw, "slack", ("message", "text")),
        )

    def resolve_url(self) -> str:
        return secret_or_file(self.api_url, self.api_url_file, register_url)


def build_body(config: SlackConfig, payload: Mapping[str, Any]) -> dict[str, Any]:
    msg = config.render_message(payload, style="text", limit=LIMIT, unit="chars")
    # A receiver's own title/text template is its own mrkdwn (links, mentions): sent as written.
    title = msg.title if msg.own_title else mrkdwn_escape(msg.title)
    text = f"*{title}*\n{msg.body if msg.own_body else mrkdwn_escape(msg.body)}"
    body: dict[str, Any] = {"text": text, "mrkdwn": True}
    if config.channel:
        body["channel"] = config.channel
    if config.username:
        body["username"] = config.username
    return body


class SlackNotifier(HttpChannel[SlackConfig]):
    integration = "slack"
    credential = "api_url_file"

    def request(self, group: Mapping[str, Any], idempotency_key: str | None) -> Post:
        return json_post(self.config.resolve_url(), build_body(self.config, group))


def slack_factory(raw: Mapping[str, Any]) -> SlackNotifier:
    return SlackNotifier(SlackConfig.from_mapping(raw))
