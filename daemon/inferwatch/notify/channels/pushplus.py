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

import httpx

from inferwatch.notify.channels.common import ChatOptions, chat_fields, check_secret, secret_fields
from inferwatch.notify.channels.http_channel import (
    HttpChannel,
    code_outcome,
    json_body,
    secret_or_file,
)
from inferwatch.notify.message import fit
from inferwatch.notify.retry import Outcome

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


def classify_body(content: bytes, status: int) -> Outcome:
    return code_outcome(
        "pushplus", content, status, fields=("code", "msg"), ok=200, retry=RETRY_CODES.__contains__
    )


class PushPlusNotifier(HttpChannel[PushPlusConfig]):
    integration = "pushplus"

    async def notify(
        self, payload: Mapping[str, Any], idempotency_key: str | None = None
    ) -> Outcome:
        group = self._group(payload)
        if group is None:
            return Outcome.ok()

        async def request() -> httpx.Response:
            token = self.config.resolve_token()
            body = build_body(self.config, token, group)
            return await self._http().post(
                self.config.api_url,
                content=json_body(body),
                headers={"Content-Type": "application/json"},
            )

        return await self._attempt(
            request, "token_file", verdict=lambda r: classify_body(r.content, r.status_code)
        )


def pushplus_factory(raw: Mapping[str, Any]) -> PushPlusNotifier:
    return PushPlusNotifier(PushPlusConfig.from_mapping(raw))
