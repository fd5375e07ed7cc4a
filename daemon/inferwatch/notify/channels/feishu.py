"""Feishu / Lark custom bot (飞书自定义机器人), configured as ``feishu_configs``.

Feishu mostly answers HTTP 200 when it refuses; the verdict is the body's ``code`` (older
servers: ``StatusCode``), notify.md §3.3: 0 ok; 11232 (frequency limited) retries with backoff;
19021 (sign or timestamp), 19024 (keyword), 19001 (token), 9499 (bad request) and other codes
are permanent; HTTP 429/5xx retry. Signing differs from DingTalk: the timestamp is in seconds,
``timestamp + "\\n" + secret`` is the HMAC **key** over an empty message, and both go in the
JSON body; it is computed at send time. The hook token (in the URL path) and the secret are
registered for redaction. ``text`` is the default; ``interactive`` sends a card with a colour
header by severity (Lark: set ``api_url`` to open.larksuite.com).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, cast

import httpx

from inferwatch.notify.channels.common import chat_fields, check_secret, secret_fields
from inferwatch.notify.channels.http_channel import (
    HttpChannel,
    Post,
    ResultCode,
    json_post,
    secret_or_file,
)
from inferwatch.notify.channels.signed import SignedChatOptions

DEFAULT_API_URL = "https://open.feishu.cn/open-apis/bot/v2/hook"
LIMIT = 18000  # ≈20 KB per request [unverified]; leave room for the JSON around the text
FREQUENCY_LIMITED = 11232
MsgType = Literal["text", "interactive"]
TEMPLATE = {"critical": "red", "warning": "orange", "info": "blue", "resolved": "green"}


def sign(secret: str, timestamp: int) -> str:
    """Feishu's signature for ``timestamp`` (Unix seconds)."""
    key = f"{timestamp}\n{secret}".encode()
    return base64.b64encode(hmac.new(key, b"", hashlib.sha256).digest()).decode("ascii")


@dataclass(frozen=True, slots=True)
class FeishuConfig(SignedChatOptions):
    token: str | None = None
    token_file: Path | None = None
    api_url: str = DEFAULT_API_URL
    msg_type: MsgType = "text"

    def __post_init__(self) -> None:
        check_secret("feishu", "token", self.token, self.token_file)
        self.check_signing("feishu")
        if self.msg_type not in ("text", "interactive"):
            raise ValueError("feishu: msg_type must be text or interactive")

    @classmethod
    def from_mapping(cls, raw: Mapping[str, Any]) -> FeishuConfig:
        return cls(
            **secret_fields(raw, "token", "secret"),
            api_url=str(raw.get("api_url") or DEFAULT_API_URL).rstrip("/"),
            msg_type=cast(MsgType, raw.get("msg_type", "text")),
            **chat_fields(raw, "feishu"),
        )


def build_body(config: FeishuConfig, payload: Mapping[str, Any]) -> dict[str, Any]:
    if config.msg_type == "text":
        msg = config.render_message(payload, style="text", limit=LIMIT)
        return {"msg_type": "text", "content": {"text": f"{msg.title}\n\n{msg.body}"}}
    msg = config.render_message(payload, style="markdown", limit=LIMIT)
    card = {
        "header": {
            "title": {"tag": "plain_text", "content": msg.title},
            "template": TEMPLATE[msg.severity],
        },
        "elements": [{"tag": "markdown", "content": msg.body}],
    }
    return {"msg_type": "interactive", "card": card}


ANSWER = ResultCode(("code", "StatusCode"), ("msg", "StatusMessage"), ok=0,
                    retry=lambda c: c == FREQUENCY_LIMITED)  # fmt: skip


class FeishuNotifier(HttpChannel[FeishuConfig]):
    integration = "feishu"
    result_code = ANSWER

    def request(self, group: Mapping[str, Any], idempotency_key: str | None) -> Post:
        body = build_body(self.config, group)
        token = secret_or_file(self.config.token, self.config.token_file)
        secret = self.config.signing_secret()
        if secret:
            ts = int(self.clock.time())
            body = {"timestamp": str(ts), "sign": sign(secret, ts), **body}
        return json_post(
            f"{self.config.api_url}/{token}", body, content_type="application/json; charset=utf-8"
        )

    def detail(self, resp: httpx.Response) -> str:
        """Feishu's own code and message when a 4xx/5xx carries them, else the answer's head."""
        found = ANSWER.read(resp.content)
        return f"code {found[0]}: {found[1]}" if found is not None else super().detail(resp)


def feishu_factory(raw: Mapping[str, Any]) -> FeishuNotifier:
    return FeishuNotifier(FeishuConfig.from_mapping(raw))
