"""Bark (iOS push via APNs, api.day.app or a self-hosted bark-server), as ``bark_configs``.

The device key is the whole credential; it goes in the JSON body of ``POST /push`` rather than
the URL path, is registered for redaction and may live in ``device_key_file``. Severity picks the
iPhone's behaviour (notify.md §3.11): critical → ``critical`` (rings in silent mode), warning →
``timeSensitive`` (breaks Focus), info → ``active``, resolved → ``passive``. ``id`` is derived
from the group key so the resolved message replaces the firing one and a duplicated retry adds
no second banner. Success is HTTP 200 **and** body ``code`` 200; 5xx retry, other codes are
permanent.
"""

from __future__ import annotations

import hashlib
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

DEFAULT_URL = "https://api.day.app"
LIMIT = 3000  # APNs payloads are capped at 4 KB in total; leave room for the other fields
LEVEL = {"critical": "critical", "warning": "timeSensitive", "info": "active",
         "resolved": "passive"}  # fmt: skip


@dataclass(frozen=True, slots=True)
class BarkConfig(ChatOptions):
    device_key: str | None = None
    device_key_file: Path | None = None
    url: str = DEFAULT_URL
    group: str = "inferwatch"
    sound: str | None = None
    click_url: str | None = None

    def __post_init__(self) -> None:
        check_secret("bark", "device_key", self.device_key, self.device_key_file)

    @classmethod
    def from_mapping(cls, raw: Mapping[str, Any]) -> BarkConfig:
        return cls(
            **secret_fields(raw, "device_key"),
            url=str(raw.get("url") or DEFAULT_URL).rstrip("/"),
            group=str(raw.get("group", "inferwatch")),
            sound=raw.get("sound"),
            click_url=raw.get("click_url"),
            **chat_fields(raw, "bark"),
        )

    def resolve_key(self) -> str:
        return secret_or_file(self.device_key, self.device_key_file)


def notification_id(payload: Mapping[str, Any]) -> str:
    """Stable per alert group, so every later message about it replaces the banner."""
    alerts = payload.get("alerts", [])
    basis = str(payload.get("groupKey") or (alerts[0].get("fingerprint") if alerts else ""))
    return "iw-" + hashlib.sha256(basis.encode("utf-8")).hexdigest()[:16]


def build_body(config: BarkConfig, key: str, payload: Mapping[str, Any]) -> dict[str, Any]:
    msg = config.render_message(payload, style="text", limit=LIMIT)
    body: dict[str, Any] = {
        "device_key": key,
        "title": msg.title,
        "body": msg.body,
        "level": LEVEL[msg.severity],
        "group": config.group,
        "id": notification_id(payload),
    }
    if config.sound:
        body["sound"] = config.sound
    if config.click_url:
        body["url"] = config.click_url
    return body


class BarkNotifier(HttpChannel[BarkConfig]):
    integration = "bark"
    credential = "device_key_file"
    result_code = ResultCode(("code",), ("message",), ok=200, retry=lambda c: c >= 500)

    def request(self, group: Mapping[str, Any], idempotency_key: str | None) -> Post:
        body = build_body(self.config, self.config.resolve_key(), group)
        return json_post(
            self.config.url + "/push", body, content_type="application/json; charset=utf-8"
        )


def bark_factory(raw: Mapping[str, Any]) -> BarkNotifier:
    return BarkNotifier(BarkConfig.from_mapping(raw))
