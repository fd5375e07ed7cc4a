"""Gotify (self-hosted push for Android), configured as ``gotify_configs``.

The application token goes in the ``X-Gotify-Key`` header rather than ``?token=`` so it never
sits in a URL that httpx or a proxy might log; it is registered for redaction and may live in
``token_file``. Severity sets the priority, which decides whether the Android app pops up and
sounds (high ≈ 8-10, notify.md §3.9): critical 10, warning 8, info 4, resolved 2. The message
is Markdown (``client::display``). 200 = ok; 5xx/429 retry; 400/401/403 are permanent.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from inferwatch.notify.channels.common import ChatOptions, chat_fields, check_secret, secret_fields
from inferwatch.notify.channels.http_channel import (
    HttpChannel,
    Post,
    error_text,
    json_post,
    secret_or_file,
)

PRIORITY = {"critical": 10, "warning": 8, "info": 4, "resolved": 2}
LIMIT = 8000


@dataclass(frozen=True, slots=True)
class GotifyConfig(ChatOptions):
    url: str
    token: str | None = None
    token_file: Path | None = None

    def __post_init__(self) -> None:
        if not self.url:
            raise ValueError("gotify: url (the server) is required")
        check_secret("gotify", "token", self.token, self.token_file)

    @classmethod
    def from_mapping(cls, raw: Mapping[str, Any]) -> GotifyConfig:
        return cls(
            url=str(raw.get("url") or "").rstrip("/"),
            **secret_fields(raw, "token"),
            **chat_fields(raw, "gotify"),
        )

    def resolve_token(self) -> str:
        return secret_or_file(self.token, self.token_file)


def build_body(config: GotifyConfig, payload: Mapping[str, Any]) -> dict[str, Any]:
    msg = config.render_message(payload, style="markdown", limit=LIMIT)
    return {
        "title": msg.title,
        "message": msg.body,
        "priority": PRIORITY[msg.severity],
        "extras": {"client::display": {"contentType": "text/markdown"}},
    }


def _error(doc: Any) -> str:
    """``error: description`` from Gotify's ``{"error","errorCode","errorDescription"}``."""
    return f"{doc.get('error', '')}: {doc.get('errorDescription', '')}"


class GotifyNotifier(HttpChannel[GotifyConfig]):
    integration = "gotify"
    credential = "token_file"

    def request(self, group: Mapping[str, Any], idempotency_key: str | None) -> Post:
        body = build_body(self.config, group)
        token = self.config.resolve_token()
        return json_post(self.config.url + "/message", body, headers={"X-Gotify-Key": token})

    def detail(self, resp: httpx.Response) -> str:
        return error_text(resp.content, _error)


def gotify_factory(raw: Mapping[str, Any]) -> GotifyNotifier:
    return GotifyNotifier(GotifyConfig.from_mapping(raw))
