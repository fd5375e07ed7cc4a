"""Pushover, configured as Alertmanager's ``pushover_configs``.

Application token and user key travel in the form body (never the URL), are registered for
redaction and may live in ``token_file``/``user_key_file``. Severity maps to Pushover priority
(notify.md §3.11): critical → 2 (emergency: repeats every ``retry`` seconds until acknowledged,
for at most ``expire``), warning → 0, info and resolved → -1 (quiet). Success is HTTP 200 **and**
body ``status`` 1; 4xx (``{"status":0,"errors":[…]}``) is permanent; 429 (monthly quota spent)
and 5xx retry. Limits: title 250, message 1024 characters.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from inferwatch.notify.channels.common import (
    ChatOptions,
    chat_fields,
    check_secret,
    parse_duration,
    secret_fields,
)
from inferwatch.notify.channels.http_channel import DETAIL_CHARS, HttpChannel, Post, secret_or_file
from inferwatch.notify.message import fit
from inferwatch.notify.retry import Outcome

DEFAULT_API_URL = "https://api.pushover.net/1/messages.json"
TITLE_CHARS, MESSAGE_CHARS = 250, 1024
PRIORITY = {"critical": 2, "warning": 0, "info": -1, "resolved": -1}


@dataclass(frozen=True, slots=True)
class PushoverConfig(ChatOptions):
    token: str | None = None
    token_file: Path | None = None
    user_key: str | None = None
    user_key_file: Path | None = None
    api_url: str = DEFAULT_API_URL
    retry: int = 60
    expire: int = 3600

    def __post_init__(self) -> None:
        check_secret("pushover", "token", self.token, self.token_file)
        check_secret("pushover", "user_key", self.user_key, self.user_key_file)
        if self.retry < 30 or not 0 < self.expire <= 10800:
            raise ValueError("pushover: retry must be >= 30 s and expire at most 10800 s")

    @classmethod
    def from_mapping(cls, raw: Mapping[str, Any]) -> PushoverConfig:
        return cls(
            **secret_fields(raw, "token", "user_key"),
            api_url=str(raw.get("api_url") or DEFAULT_API_URL),
            retry=int(parse_duration(raw.get("retry"), 60.0)),
            expire=int(parse_duration(raw.get("expire"), 3600.0)),
            **chat_fields(raw, "pushover"),
        )


def build_form(config: PushoverConfig, payload: Mapping[str, Any]) -> dict[str, str]:
    msg = config.render_message(payload, limit=MESSAGE_CHARS, unit="chars")
    form = {
        "token": secret_or_file(config.token, config.token_file),
        "user": secret_or_file(config.user_key, config.user_key_file),
        "title": fit(msg.title, TITLE_CHARS, "chars"),
        "message": msg.body or msg.title,
        "priority": str(PRIORITY[msg.severity]),
    }
    if form["priority"] == "2":
        form |= {"retry": str(config.retry), "expire": str(config.expire)}
    return form


def _answer(content: bytes) -> tuple[int | None, str]:
    """Pushover's ``status`` and its ``errors`` joined, or (None, the answer's head)."""
    try:
        doc = json.loads(content)
        errors = doc.get("errors") or []
        return int(doc["status"]), "; ".join(str(e) for e in errors)[:DETAIL_CHARS]
    except (ValueError, AttributeError, KeyError, TypeError):
        return None, content[:DETAIL_CHARS].decode("utf-8", "replace")


class PushoverNotifier(HttpChannel[PushoverConfig]):
    integration = "pushover"

    def request(self, group: Mapping[str, Any], idempotency_key: str | None) -> Post:
        return Post(self.config.api_url, form=build_form(self.config, group))

    def verdict(self, resp: httpx.Response) -> Outcome:
        """Delivered only with body ``status`` 1; a 2xx saying otherwise is a refusal."""
        status, errors = _answer(resp.content)
        if status == 1:
            return Outcome.ok(resp.status_code)
        return Outcome.permanent(f"pushover: status {status}: {errors}", resp.status_code)

    def detail(self, resp: httpx.Response) -> str:
        return _answer(resp.content)[1]


def pushover_factory(raw: Mapping[str, Any]) -> PushoverNotifier:
    return PushoverNotifier(PushoverConfig.from_mapping(raw))
