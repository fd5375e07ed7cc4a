"""PushPlus (推送加) to WeChat via its service account, configured as ``pushplus_configs``.

PushPlus always answers HTTP 200; the verdict is body ``code`` (notify.md §3.5): 200 accepted;
900 (system error) and 903 (send failed) retry with backoff; 905, 907 (unknown token), 908, 912
are permanent, and so is 909 (under review): resending it would duplicate the message once the
review passes. The token travels in the JSON body, is registered for redaction and may live in
``token_file``. Markdown template; content is kept under 20000 bytes, the title short.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inferwatch.notify.channels.common import ChatOptions, chat_fields, check_secret, secret_fields
from inferwatch.notify.channels.http_channel import (
    HttpChannel,
    Post,
    ResultCode,
    json_post,
    secret_or_file,
)
from inferwatch.notify.message import fit

DEFAULT_API_URL = "https://www.pushplus.plus/send"
TITLE_CHARS, CONTENT_BYTES = 100, 19000
RETRY_CODES = frozenset({900, 903})


@dataclass(frozen=True, slots=True)
class PushPlusConfig(ChatOptions):
    token: str | None = None
    token_file: Path | None = None
    api_url: str = DEFAULT_API_URL
    channel: str | None = None
    topic: str | None = None

    def __post_init__(self) -> None:
        check_secret("pushplus", "token", self.token, self.token_file)

    @classmethod
    def from_mapping(cls, raw: Mapping[str, Any]) -> PushPlusConfig:
        return cls(
            **secret_fields(raw, "token"),
            api_url=str(raw.get("api_url") or DEFAULT_API_URL),
            channel=raw.get("channel"),
            topic=raw.get("topic"),
            **chat_fields(raw, "pushplus"),
        )

    def resolve_token(self) -> str:
        return secret_or_file(self.token, self.token_file)


def build_body(config: PushPlusConfig, token: str, payload: Mapping[str, Any]) -> dict[str, Any]:
    msg = config.render_message(payload, style="markdown", limit=CONTENT_BYTES)
    body: dict[str, Any] = {
        "token": token,
        "title": fit(msg.title, TITLE_CHARS, "chars"),
        "content": msg.body,
        "template": "markdown",
    }
    if config.channel:
        body["channel"] = config.channel
    if config.topic:
        body["topic"] = config.topic
    return body


class PushPlusNotifier(HttpChannel[PushPlusConfig]):
    integration = "pushplus"
    credential = "token_file"
    result_code = ResultCode(("code",), ("msg",), ok=200, retry=RETRY_CODES.__contains__)

    def request(self, group: Mapping[str, Any], idempotency_key: str | None) -> Post:
        body = build_body(self.config, self.config.resolve_token(), group)
        return json_post(self.config.api_url, body)


def pushplus_factory(raw: Mapping[str, Any]) -> PushPlusNotifier:
    return PushPlusNotifier(PushPlusConfig.from_mapping(raw))
