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

import httpx

from inferwatch.notify.channels.common import ChatOptions, chat_fields, check_secret, secret_fields
from inferwatch.notify.channels.http_channel import HttpChannel, code_outcome, json_body
from inferwatch.notify.message import fit
from inferwatch.notify.retry import Outcome
from inferwatch.redact import register_secret

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
        key = self.sendkey
        if key is None:
            assert self.sendkey_file is not None
            key = self.sendkey_file.read_text(encoding="utf-8").strip()
            register_secret(key)
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


def classify_body(content: bytes, status: int) -> Outcome:
    return code_outcome("serverchan", content, status, fields=("code", "message"), ok=0)


class ServerChanNotifier(HttpChannel[ServerChanConfig]):
    integration = "serverchan"

    async def notify(
        self, payload: Mapping[str, Any], idempotency_key: str | None = None
    ) -> Outcome:
        group = self._group(payload)
        if group is None:
            return Outcome.ok()
        body = build_body(self.config, group)

        async def request() -> httpx.Response:
            return await self._http().post(
                self.config.endpoint(),
                content=json_body(body),
                headers={"Content-Type": "application/json;charset=utf-8"},
            )

        return await self._attempt(
            request, "sendkey_file", verdict=lambda r: classify_body(r.content, r.status_code)
        )


def serverchan_factory(raw: Mapping[str, Any]) -> ServerChanNotifier:
    return ServerChanNotifier(ServerChanConfig.from_mapping(raw))
