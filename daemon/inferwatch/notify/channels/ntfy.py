"""ntfy (ntfy.sh or self-hosted), configured as ``ntfy_configs``.

Messages are published as JSON to the server root (notify.md §3.7) so the topic travels in the
body, not the URL: on ntfy.sh the topic name is effectively a password, so it is registered for
redaction like the access token, and both may live in ``*_file`` fields. Severity picks the
phone's behaviour (§3.11): critical → priority 5 (long bursts), warning → 4 (pop-over),
info → 3, resolved → 2, each with an emoji tag. 200 = ok; 429 (42901-42910, the server's
limits) and 5xx retry; 400/401/403/413 are permanent. The idempotency key becomes
``X-Sequence-ID`` so servers ≥2.16 update a retried message in place instead of adding one.
"""

from __future__ import annotations

import re
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
    optional_secret,
    secret_or_file,
)

DEFAULT_URL = "https://ntfy.sh"
LIMIT = 4096
PRIORITY = {"critical": 5, "warning": 4, "info": 3, "resolved": 2}
TAGS = {"critical": "rotating_light", "warning": "warning", "info": "information_source",
        "resolved": "white_check_mark"}  # fmt: skip
_SEQUENCE_ID = re.compile(r"^[-_A-Za-z0-9]{1,64}$")


@dataclass(frozen=True, slots=True)
class NtfyConfig(ChatOptions):
    topic: str | None = None
    topic_file: Path | None = None
    url: str = DEFAULT_URL
    token: str | None = None
    token_file: Path | None = None

    def __post_init__(self) -> None:
        check_secret("ntfy", "topic", self.topic, self.topic_file)
        check_secret("ntfy", "token", self.token, self.token_file, required=False)

    @classmethod
    def from_mapping(cls, raw: Mapping[str, Any]) -> NtfyConfig:
        return cls(
            **secret_fields(raw, "topic", "token"),
            url=str(raw.get("url") or DEFAULT_URL).rstrip("/"),
            **chat_fields(raw, "ntfy"),
        )

    def resolve(self) -> tuple[str, str | None]:
        """(topic, token), files read at send time so a rotated secret needs no reload."""
        topic = secret_or_file(self.topic, self.topic_file)
        return topic, optional_secret(self.token, self.token_file)


def build_body(config: NtfyConfig, topic: str, payload: Mapping[str, Any]) -> dict[str, Any]:
    msg = config.render_message(payload, style="text", limit=LIMIT)
    return {
        "topic": topic,
        "title": msg.title,
        "message": msg.body,
        "priority": PRIORITY[msg.severity],
        "tags": [TAGS[msg.severity]],
    }


def _error(doc: Any) -> str:
    """``code error`` from ntfy's error JSON (``{"code":42901,"http":429,"error":"..."}``)."""
    return f"{doc.get('code', '')} {doc.get('error', '')}".strip()


class NtfyNotifier(HttpChannel[NtfyConfig]):
    integration = "ntfy"

    def request(self, group: Mapping[str, Any], idempotency_key: str | None) -> Post:
        headers: dict[str, str] = {}
        if idempotency_key and _SEQUENCE_ID.match(idempotency_key):
            headers["X-Sequence-ID"] = idempotency_key
        topic, token = self.config.resolve()
        if token:
            headers["Authorization"] = f"Bearer {token}"
        body = build_body(self.config, topic, group)
        return json_post(self.config.url + "/", body, headers=headers)

    def detail(self, resp: httpx.Response) -> str:
        return error_text(resp.content, _error)


def ntfy_factory(raw: Mapping[str, Any]) -> NtfyNotifier:
    return NtfyNotifier(NtfyConfig.from_mapping(raw))
