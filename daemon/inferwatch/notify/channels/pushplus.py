"""PushPlus (推送加) to WeChat via its service account, configured as ``pushplus_configs``.

PushPlus always answers HTTP 200; the verdict is body ``code`` (notify.md §3.5): 200 accepted;
900 (system error) and 903 (send failed) retry with backoff; 905, 907 (unknown token), 908, 912
are permanent, and so is 909 (under review): resending it would duplicate the message once the
review passes. The token travels in the JSON body, is registered for redaction and may live in
``token_file``. Markdown template; content is kept under 20000 bytes, the title short.
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
from inferwatch.notify.message import Language, fit, render
from inferwatch.notify.payload import truncate
from inferwatch.notify.retry import Outcome, classify_exception, classify_http
from inferwatch.redact import redact, register_secret

DEFAULT_API_URL = "https://www.pushplus.plus/send"
TITLE_CHARS, CONTENT_BYTES = 100, 19000
RETRY_CODES = frozenset({900, 903})


@dataclass(frozen=True, slots=True)
class PushPlusConfig:
    token: str | None = None
    token_file: Path | None = None
    api_url: str = DEFAULT_API_URL
    channel: str | None = None
    topic: str | None = None
    language: Language = "en"
    send_resolved: bool = True
    max_alerts: int = 0
    proxy_url: str | None = None
    timeout: float = 10.0

    def __post_init__(self) -> None:
        if (self.token is None) == (self.token_file is None):
            raise ValueError("pushplus: exactly one of token and token_file must be set")
        if self.token is not None:
            register_secret(self.token)

    @classmethod
    def from_mapping(cls, raw: Mapping[str, Any]) -> PushPlusConfig:
        http = raw.get("http_config") or {}
        token_file = raw.get("token_file")
        return cls(
            token=raw.get("token"),
            token_file=Path(token_file) if token_file else None,
            api_url=str(raw.get("api_url") or DEFAULT_API_URL),
            channel=raw.get("channel"),
            topic=raw.get("topic"),
            language=cast(Language, raw.get("language", "en")),
            send_resolved=bool(raw.get("send_resolved", True)),
            max_alerts=int(raw.get("max_alerts", 0)),
            proxy_url=http.get("proxy_url"),
            timeout=parse_duration(raw.get("timeout", http.get("timeout")), 10.0),
        )

    def resolve_token(self) -> str:
        return secret_or_file(self.token, self.token_file)


def build_body(config: PushPlusConfig, token: str, payload: Mapping[str, Any]) -> dict[str, Any]:
    msg = render(payload, language=config.language, style="markdown", limit=CONTENT_BYTES)
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
    try:
        doc = json.loads(content)
        code = int(doc["code"])
        text = str(doc.get("msg", ""))[:200]
    except (ValueError, KeyError, TypeError):
        return Outcome.retry("pushplus: unreadable answer", status=status)
    if code == 200:
        return Outcome.ok(status)
    reason = f"pushplus: code {code}: {text}"
    return (
        Outcome.retry(reason, status=status)
        if code in RETRY_CODES
        else (Outcome.permanent(reason, status))
    )


class PushPlusNotifier(HttpChannel[PushPlusConfig]):
    integration = "pushplus"

    async def notify(
        self, payload: Mapping[str, Any], idempotency_key: str | None = None
    ) -> Outcome:
        group = self._group(payload)
        if group is None:
            return Outcome.ok()
        try:
            token = self.config.resolve_token()
            body = build_body(self.config, token, truncate(group, self.config.max_alerts))
            resp = await self._http().post(
                self.config.api_url,
                content=json.dumps(body, ensure_ascii=False).encode("utf-8"),
                headers={"Content-Type": "application/json"},
            )
        except OSError as exc:
            return Outcome.retry(f"pushplus: token_file: {type(exc).__name__}")
        except httpx.HTTPError as exc:
            return classify_exception(exc)
        if 200 <= resp.status_code < 300:
            return classify_body(resp.content, resp.status_code)
        out = classify_http(resp.status_code, resp.content, resp.headers, self.clock.time())
        reason = redact(f"pushplus: {out.reason}: {resp.text[:200]}")
        return Outcome(out.kind, reason, out.retry_after, out.status)


def pushplus_factory(raw: Mapping[str, Any]) -> PushPlusNotifier:
    return PushPlusNotifier(PushPlusConfig.from_mapping(raw))
