"""DingTalk custom robot (钉钉自定义机器人), configured as ``dingtalk_configs``.

DingTalk answers HTTP 200 when it refuses; the verdict is the body's ``errcode`` (notify.md
§3.2): 0 ok; 130101 (over 20/min: a ~10 min throttle follows) retries after that pause; -1
(busy) retries; 310000 (keyword missing, host clock off, sign mismatch, IP not whitelisted) and
all other codes are permanent, with DingTalk's ``errmsg`` kept as the cause. With a ``SEC…``
secret the request is signed **at send time** (a queued message would otherwise carry a stale
timestamp): HMAC-SHA256 keyed by the secret over ``timestamp + "\\n" + secret``, base64, both in
the query string, encoded once by httpx. Token and secret are registered for redaction. The
``keyword`` leads the title, a receiver's own ``title`` template too, so DingTalk never refuses
a message for lacking it.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inferwatch.notify.channels.common import chat_fields, check_secret, secret_fields
from inferwatch.notify.channels.http_channel import (
    HttpChannel,
    Post,
    ResultCode,
    json_post,
    secret_or_file,
)
from inferwatch.notify.channels.signed import SignedChatOptions

DEFAULT_API_URL = "https://oapi.dingtalk.com/robot/send"
LIMIT = 18000  # documented 20000 B for the whole message [unverified]; leave room for the rest
THROTTLED, BUSY = 130101, -1
THROTTLE_PAUSE = 600.0


def sign(secret: str, timestamp_ms: int) -> str:
    """DingTalk's signature for ``timestamp_ms`` (Unix milliseconds)."""
    message = f"{timestamp_ms}\n{secret}".encode()
    digest = hmac.new(secret.encode("utf-8"), message, hashlib.sha256).digest()
    return base64.b64encode(digest).decode("ascii")


@dataclass(frozen=True, slots=True)
class DingTalkConfig(SignedChatOptions):
    access_token: str | None = None
    access_token_file: Path | None = None
    api_url: str = DEFAULT_API_URL
    keyword: str | None = None
    at_mobiles: tuple[str, ...] = ()
    at_user_ids: tuple[str, ...] = ()
    at_all: bool = False

    def __post_init__(self) -> None:
        check_secret("dingtalk", "access_token", self.access_token, self.access_token_file)
        self.check_signing("dingtalk")

    @classmethod
    def from_mapping(cls, raw: Mapping[str, Any]) -> DingTalkConfig:
        return cls(
            **secret_fields(raw, "access_token", "secret"),
            api_url=str(raw.get("api_url") or DEFAULT_API_URL),
            keyword=raw.get("keyword"),
            at_mobiles=tuple(str(m) for m in raw.get("at_mobiles") or ()),
            at_user_ids=tuple(str(u) for u in raw.get("at_user_ids") or ()),
            at_all=bool(raw.get("at_all", False)),
            **chat_fields(raw, "dingtalk"),
        )

    def query(self, now: float) -> dict[str, str]:
        """Query for a send at ``now``; files are read now so a rotated secret needs no reload."""
        token = secret_or_file(self.access_token, self.access_token_file)
        params = {"access_token": token}
        secret = self.signing_secret()
        if secret:
            ts = int(now * 1000)
            params |= {"timestamp": str(ts), "sign": sign(secret, ts)}
        return params


def build_body(config: DingTalkConfig, payload: Mapping[str, Any]) -> dict[str, Any]:
    """Markdown; mentions only ring for a critical firing group (and must appear in the text)."""
    msg = config.render_message(payload, style="markdown", limit=LIMIT)
    title = f"{config.keyword} {msg.title}" if config.keyword else msg.title
    text = f"#### {title}\n\n{msg.body}"
    ring = msg.severity == "critical"
    at: dict[str, Any] = {"isAtAll": ring and config.at_all}
    if ring and (config.at_mobiles or config.at_user_ids):
        at |= {"atMobiles": list(config.at_mobiles), "atUserIds": list(config.at_user_ids)}
        text += "\n\n" + " ".join(f"@{m}" for m in (*config.at_mobiles, *config.at_user_ids))
    return {"msgtype": "markdown", "markdown": {"title": title, "text": text}, "at": at}


class DingTalkNotifier(HttpChannel[DingTalkConfig]):
    integration = "dingtalk"
    result_code = ResultCode(
        ("errcode",), ("errmsg",), ok=0,
        retry=lambda c: c == BUSY, pauses={THROTTLED: THROTTLE_PAUSE},
    )  # fmt: skip

    def request(self, group: Mapping[str, Any], idempotency_key: str | None) -> Post:
        return json_post(
            self.config.api_url,
            build_body(self.config, group),
            content_type="application/json;charset=utf-8",
            params=self.config.query(self.clock.time()),
        )


def dingtalk_factory(raw: Mapping[str, Any]) -> DingTalkNotifier:
    return DingTalkNotifier(DingTalkConfig.from_mapping(raw))
