"""Gotify (self-hosted push for Android), configured as ``gotify_configs``.

The application token goes in the ``X-Gotify-Key`` header rather than ``?token=`` so it never
sits in a URL that httpx or a proxy might log; it is registered for redaction and may live in
``token_file``. Severity sets the priority, which decides whether the Android app pops up and
sounds (high ≈ 8-10, notify.md §3.9): critical 10, warning 8, info 4, resolved 2. The message
is Markdown (``client::display``). 200 = ok; 5xx/429 retry; 400/401/403 are permanent.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import httpx

from inferwatch.notify.channels.http_channel import HttpChannel, secret_or_file
from inferwatch.notify.channels.webhook import parse_duration
from inferwatch.notify.message import Language, render
from inferwatch.notify.payload import truncate
from inferwatch.notify.retry import Outcome, classify_exception, classify_http
from inferwatch.redact import redact, register_secret

PRIORITY = {"critical": 10, "warning": 8, "info": 4, "resolved": 2}
LIMIT = 8000


@dataclass(frozen=True, slots=True)
class GotifyConfig:
    url: str
    token: str | None = None
    token_file: Path | None = None
    language: Language = "en"
    send_resolved: bool = True
    max_alerts: int = 0
    proxy_url: str | None = None
    timeout: float = 10.0

    def __post_init__(self) -> None:
        if not self.url:
            raise ValueError("gotify: url (the server) is required")
        if (self.token is None) == (self.token_file is None):
            raise ValueError("gotify: exactly one of token and token_file must be set")
        if self.token is not None:
            register_secret(self.token)

    @classmethod
    def from_mapping(cls, raw: Mapping[str, Any]) -> GotifyConfig:
        http = raw.get("http_config") or {}
        token_file = raw.get("token_file")
        return cls(
            url=str(raw.get("url") or "").rstrip("/"),
            token=raw.get("token"),
            token_file=Path(token_file) if token_file else None,
            language=cast(Language, raw.get("language", "en")),
            send_resolved=bool(raw.get("send_resolved", True)),
            max_alerts=int(raw.get("max_alerts", 0)),
            proxy_url=http.get("proxy_url"),
            timeout=parse_duration(raw.get("timeout", http.get("timeout")), 10.0),
        )

    def resolve_token(self) -> str:
        return secret_or_file(self.token, self.token_file)


def build_body(config: GotifyConfig, payload: Mapping[str, Any]) -> dict[str, Any]:
    msg = render(payload, language=config.language, style="markdown", limit=LIMIT)
    return {
        "title": msg.title,
        "message": msg.body,
        "priority": PRIORITY[msg.severity],
        "extras": {"client::display": {"contentType": "text/markdown"}},
    }


class GotifyNotifier(HttpChannel[GotifyConfig]):
    integration = "gotify"

    async def notify(
        self, payload: Mapping[str, Any], idempotency_key: str | None = None
    ) -> Outcome:
        group = self._group(payload)
        if group is None:
            return Outcome.ok()
        body = build_body(self.config, truncate(group, self.config.max_alerts))
        try:
            token = self.config.resolve_token()
            resp = await self._http().post(
                self.config.url + "/message",
                content=json.dumps(body, ensure_ascii=False).encode("utf-8"),
                headers={"Content-Type": "application/json", "X-Gotify-Key": token},
            )
        except OSError as exc:
            return Outcome.retry(f"gotify: token_file: {type(exc).__name__}")
        except httpx.HTTPError as exc:
            return classify_exception(exc)
        out = classify_http(resp.status_code, resp.content, resp.headers, self.clock.time())
        if not out.reason:
            return out
        reason = redact(f"gotify: {out.reason}: {_error(resp.content)}")
        return Outcome(out.kind, reason, out.retry_after, out.status)


def _error(content: bytes) -> str:
    """``error: description`` from Gotify's ``{"error","errorCode","errorDescription"}``."""
    try:
        doc = json.loads(content)
        return f"{doc.get('error', '')}: {doc.get('errorDescription', '')}"[:200]
    except (ValueError, UnicodeDecodeError, AttributeError):
        return content[:200].decode("utf-8", "replace")


def gotify_factory(raw: Mapping[str, Any]) -> GotifyNotifier:
    return GotifyNotifier(GotifyConfig.from_mapping(raw))
