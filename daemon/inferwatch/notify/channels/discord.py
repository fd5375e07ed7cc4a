"""Discord webhook, configured as Alertmanager's ``discord_configs``.

The webhook URL carries its token in the path: it is registered for redaction and may live in
``webhook_url_file``. We post one embed (title ≤256, description ≤4096 characters, colour by
severity) with ``allowed_mentions.parse`` empty so an ``@everyone`` quoted from a log line cannot
ping a whole server, and ``?wait=true`` so success is a 200 carrying the stored message
(notify.md §3.9). 429 carries a fractional ``retry_after`` (and ``Retry-After``), which wins over
our backoff; 400 (50035 invalid form body), 401 and 404 (webhook deleted) are permanent.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

from inferwatch.notify.channels.common import ChatOptions, chat_fields, check_secret, secret_fields
from inferwatch.notify.channels.http_channel import (
    HttpChannel,
    Post,
    error_text,
    json_post,
    secret_or_file,
)
from inferwatch.notify.message import fit
from inferwatch.redact import register_secret

TITLE_CHARS, DESCRIPTION_CHARS = 256, 4096


def register_url(url: str) -> None:
    """The URL and its token segment: an error body may echo the path without the host."""
    register_secret(url)
    register_secret(urlsplit(url).path.rstrip("/").rsplit("/", 1)[-1])


COLOUR = {"critical": 0xE01E5A, "warning": 0xECB22E, "info": 0x36A2EB, "resolved": 0x2EB67D}


@dataclass(frozen=True, slots=True)
class DiscordConfig(ChatOptions):
    webhook_url: str | None = None
    webhook_url_file: Path | None = None
    username: str | None = None

    def __post_init__(self) -> None:
        check_secret(
            "discord", "webhook_url", self.webhook_url, self.webhook_url_file, register=register_url
        )

    @classmethod
    def from_mapping(cls, raw: Mapping[str, Any]) -> DiscordConfig:
        return cls(
            **secret_fields(raw, "webhook_url"),
            username=raw.get("username"),
            **chat_fields(raw, "discord"),
        )

    def resolve_url(self) -> str:
        return secret_or_file(self.webhook_url, self.webhook_url_file, register_url)


def build_body(config: DiscordConfig, payload: Mapping[str, Any]) -> dict[str, Any]:
    msg = config.render_message(payload, style="markdown",
                 limit=DESCRIPTION_CHARS, unit="chars")  # fmt: skip
    embed = {
        "title": fit(msg.title, TITLE_CHARS, "chars"),
        "description": msg.body,
        "color": COLOUR[msg.severity],
    }
    body: dict[str, Any] = {"embeds": [embed], "allowed_mentions": {"parse": []}}
    if config.username:
        body["username"] = config.username
    return body


def _error(doc: Any) -> str:
    """``code message`` from Discord's error JSON."""
    return f"{doc.get('code', '')} {doc.get('message', '')}".strip()


class DiscordNotifier(HttpChannel[DiscordConfig]):
    integration = "discord"
    credential = "webhook_url_file"

    def request(self, group: Mapping[str, Any], idempotency_key: str | None) -> Post:
        body = build_body(self.config, group)
        return json_post(self.config.resolve_url(), body, params={"wait": "true"})

    def detail(self, resp: httpx.Response) -> str:
        return error_text(resp.content, _error)


def discord_factory(raw: Mapping[str, Any]) -> DiscordNotifier:
    return DiscordNotifier(DiscordConfig.from_mapping(raw))
