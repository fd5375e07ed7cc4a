"""ServerChan (Server酱) to personal WeChat, configured as ``serverchan_configs``.

The SendKey in the URL path is the whole credential: it is registered for redaction and may
live in ``sendkey_file``. Server酱³ keys (``sctp<uid>t…``) post to
``<uid>.push.ft07.com/send/<key>.send``, Turbo keys to ``sctapi.ftqq.com/<key>.send`` (§3.4).
ServerChan answers HTTP 200 when it refuses: only body ``code`` 0 is success. Any other code is
permanent, because the usual cause is the small daily quota, which a retry before it resets
only burns (the fallback receiver takes over); 5xx and network errors retry.
``title`` is capped at 32 characters, ``desp`` at 32 KB.
"""

from __future__ import annotations

import re
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

TURBO_URL = "https://sctapi.ftqq.com"
_SC3 = re.compile(r"^sctp(\d+)t")
TITLE_CHARS, SHORT_CHARS, DESP_BYTES = 32, 64, 32000


@dataclass(frozen=True, slots=True)
class ServerChanConfig(ChatOptions):
    sendkey: str | None = None
    sendkey_file: Path | None = None
    api_url: str | None = None
    channel: str | None = None

    def __post_init__(self) -> None:
        check_secret("serverchan", "sendkey", self.sendkey, self.sendkey_file)

    @classmethod
    def from_mapping(cls, raw: Mapping[str, Any]) -> ServerChanConfig:
        return cls(
            **secret_fields(raw, "sendkey"),
            api_url=str(raw["api_url"]).rstrip("/") if raw.get("api_url") else None,
            channel=str(raw["channel"]) if raw.get("channel") else None,
            **chat_fields(raw, "serverchan"),
        )

    def endpoint(self) -> str:
        """The send URL for the key kind; ``api_url`` replaces only the scheme and host."""
        key = secret_or_file(self.sendkey, self.sendkey_file)
        sc3 = _SC3.match(key)
        base = self.api_url or (f"https://{sc3.group(1)}.push.ft07.com" if sc3 else TURBO_URL)
        return f"{base}/send/{key}.send" if sc3 else f"{base}/{key}.send"


def build_body(config: ServerChanConfig, payload: Mapping[str, Any]) -> dict[str, Any]:
    msg = config.render_message(payload, style="markdown", limit=DESP_BYTES)
    body: dict[str, Any] = {
        "title": fit(msg.title, TITLE_CHARS, "chars"),
        "desp": msg.body,
        "short": fit(msg.title, SHORT_CHARS, "chars"),
    }
    if config.channel:
        body["channel"] = config.channel
    return body


class ServerChanNotifier(HttpChannel[ServerChanConfig]):
    integration = "serverchan"
    credential = "sendkey_file"
    result_code = ResultCode(("code",), ("message",), ok=0)

    def request(self, group: Mapping[str, Any], idempotency_key: str | None) -> Post:
        body = build_body(self.config, group)
        return json_post(
            self.config.endpoint(), body, content_type="application/json;charset=utf-8"
        )


def serverchan_factory(raw: Mapping[str, Any]) -> ServerChanNotifier:
    return ServerChanNotifier(ServerChanConfig.from_mapping(raw))
