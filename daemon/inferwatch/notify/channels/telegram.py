"""Telegram Bot API ``sendMessage``, configured as Alertmanager's ``telegram_configs``.

The verdict is the HTTP status together with the body's ``ok`` (notify.md §3.8): 429 carries
``parameters.retry_after``, which wins over our backoff (Apprise ignores it and loses messages);
401/403 (bad token, bot blocked) are permanent; a 400 "can't parse entities" is resent once as
plain text rather than lost (so is a receiver's own ``title``/``message`` template, which is
its own HTML, sent unescaped). The bot token sits in the URL path, so it is registered for
redaction, may live in ``bot_token_file`` and no error text is built from the URL. Info and
resolved messages go out with ``disable_notification`` so only real problems make a sound.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from inferwatch.notify.channels.common import ChatOptions, chat_fields, check_secret, secret_fields
from inferwatch.notify.channels.http_channel import HttpChannel, Post, json_post, secret_or_file
from inferwatch.notify.message import Style
from inferwatch.notify.retry import Outcome, OutcomeKind

DEFAULT_API_URL = "https://api.telegram.org"
LIMIT = 4096  # characters after entity parsing


@dataclass(frozen=True, slots=True)
class TelegramConfig(ChatOptions):
    chat_id: int | str
    bot_token: str | None = None
    bot_token_file: Path | None = None
    api_url: str = DEFAULT_API_URL
    message_thread_id: int | None = None
    parse_mode: str = "HTML"
    disable_notifications: bool = False

    def __post_init__(self) -> None:
        check_secret("telegram", "bot_token", self.bot_token, self.bot_token_file)
        if self.parse_mode not in ("HTML", ""):
            raise ValueError("telegram: parse_mode must be HTML or empty (plain text)")

    @classmethod
    def from_mapping(cls, raw: Mapping[str, Any]) -> TelegramConfig:
        if raw.get("chat_id") in (None, ""):
            raise ValueError("telegram: chat_id is required")
        thread = raw.get("message_thread_id")
        return cls(
            chat_id=raw["chat_id"],
            **secret_fields(raw, "bot_token"),
            api_url=str(raw.get("api_url") or DEFAULT_API_URL).rstrip("/"),
            message_thread_id=int(thread) if thread is not None else None,
            parse_mode=str(raw.get("parse_mode", "HTML")),
            disable_notifications=bool(raw.get("disable_notifications", False)),
            **chat_fields(raw, "telegram"),
        )

    def resolve_token(self) -> str:
        return secret_or_file(self.bot_token, self.bot_token_file)


def build_body(config: TelegramConfig, payload: Mapping[str, Any], html: bool) -> dict[str, Any]:
    style: Style = "html" if html else "text"
    probe = config.render_message(payload, style=style, limit=LIMIT, unit="chars")
    room = LIMIT - len(probe.title) - 2
    msg = config.render_message(payload, style=style, limit=room, unit="chars")
    title = msg.title  # a receiver's own title template is its own HTML, sent as written
    if not msg.own_title:
        title = title.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    text = f"<b>{title}</b>\n\n{msg.body}" if html else f"{msg.title}\n\n{msg.body}"
    quiet = config.disable_notifications or msg.severity in ("info", "resolved")
    body: dict[str, Any] = {"chat_id": config.chat_id, "text": text, "disable_notification": quiet}
    if html:
        body["parse_mode"] = "HTML"
    if config.message_thread_id is not None:
        body["message_thread_id"] = config.message_thread_id
    return body


def _description(content: bytes) -> tuple[bool, str, dict[str, Any]]:
    try:
        doc = json.loads(content)
    except (ValueError, UnicodeDecodeError):
        return False, "", {}
    if not isinstance(doc, dict):
        return False, "", {}
    params = doc.get("parameters")
    desc = str(doc.get("description", ""))[:200]
    return doc.get("ok") is True, desc, params if isinstance(params, dict) else {}


class TelegramNotifier(HttpChannel[TelegramConfig]):
    integration = "telegram"
    credential = "bot_token_file"

    async def deliver(self, group: Mapping[str, Any], idempotency_key: str | None) -> Outcome:
        """Send; a message Telegram cannot parse as HTML is sent again as plain text."""
        outcome = await super().deliver(group, idempotency_key)
        html = self.config.parse_mode == "HTML"
        if html and outcome.kind is OutcomeKind.PERMANENT and "parse entities" in outcome.reason:
            outcome = await self.attempt(lambda: self._post(group, html=False))
        return outcome

    def request(self, group: Mapping[str, Any], idempotency_key: str | None) -> Post:
        return self._post(group, html=self.config.parse_mode == "HTML")

    def _post(self, group: Mapping[str, Any], html: bool) -> Post:
        url = f"{self.config.api_url}/bot{self.config.resolve_token()}/sendMessage"
        return json_post(url, build_body(self.config, group, html))

    def verdict(self, resp: httpx.Response) -> Outcome:
        """A 2xx is delivered only when its body says ``"ok": true``."""
        if _description(resp.content)[0]:
            return Outcome.ok(resp.status_code)
        return Outcome.retry("telegram: unreadable answer", status=resp.status_code)

    def detail(self, resp: httpx.Response) -> str:
        """Telegram's description, and where a group became a supergroup, its new chat id."""
        _, desc, params = _description(resp.content)
        if "migrate_to_chat_id" in params:
            desc += f" (group is now chat_id {params['migrate_to_chat_id']})"
        return desc


def telegram_factory(raw: Mapping[str, Any]) -> TelegramNotifier:
    return TelegramNotifier(TelegramConfig.from_mapping(raw))
