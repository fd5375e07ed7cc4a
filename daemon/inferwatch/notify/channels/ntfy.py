"""ntfy (ntfy.sh or self-hosted), configured as ``ntfy_configs``.

Messages are published as JSON to the server root (notify.md §3.7) so the topic travels in the
body, not the URL: on ntfy.sh the topic name is effectively a password, so it is registered for
redaction like the access token, and both may live in ``*_file`` fields. Severity picks the
phone's behaviour (§3.11): critical → priority 5 (long bursts), warning → 4 (pop-over),
info → 3, resolved → 2, each with an emoji tag. 200 = ok; 429 (42901-42910, the server's
limits) and 5xx retry; 400/401/403/413 are permanent. The idempotency key becomes
``X-Sequence-ID`` so servers ≥2.16 update a retried message in place instead of adding one.
"""

from __future__ import annotations

import json
import re
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

DEFAULT_URL = "https://ntfy.sh"
LIMIT = 4096
PRIORITY = {"critical": 5, "warning": 4, "info": 3, "resolved": 2}
TAGS = {"critical": "rotating_light", "warning": "warning", "info": "information_source",
        "resolved": "white_check_mark"}  # fmt: skip
_SEQUENCE_ID = re.compile(r"^[-_A-Za-z0-9]{1,64}$")


@dataclass(frozen=True, slots=True)
class NtfyConfig:
    topic: str | None = None
    topic_file: Path | None = None
    url: str = DEFAULT_URL
    token: str | None = None
    token_file: Path | None = None
    language: Language = "en"
    send_resolved: bool = True
    max_alerts: int = 0
    proxy_url: str | None = None
    timeout: float = 10.0

    def __post_init__(self) -> None:
        if (self.topic is None) == (self.topic_file is None):
            raise ValueError("ntfy: exactly one of topic and topic_file must be set")
        if self.token is not None and self.token_file is not None:
            raise ValueError("ntfy: at most one of token and token_file may be set")
        for secret in (self.topic, self.token):
            if secret is not None:
                register_secret(secret)

    @classmethod
    def from_mapping(cls, raw: Mapping[str, Any]) -> NtfyConfig:
        http = raw.get("http_config") or {}
        topic_file, token_file = raw.get("topic_file"), raw.get("token_file")
        return cls(
            topic=raw.get("topic"),
            topic_file=Path(topic_file) if topic_file else None,
            url=str(raw.get("url") or DEFAULT_URL).rstrip("/"),
            token=raw.get("token"),
            token_file=Path(token_file) if token_file else None,
            language=cast(Language, raw.get("language", "en")),
            send_resolved=bool(raw.get("send_resolved", True)),
            max_alerts=int(raw.get("max_alerts", 0)),
            proxy_url=http.get("proxy_url"),
            timeout=parse_duration(raw.get("timeout", http.get("timeout")), 10.0),
        )

    def resolve(self) -> tuple[str, str | None]:
        """(topic, token), files read at send time so a rotated secret needs no reload."""
        topic = secret_or_file(self.topic, self.topic_file)
        token = self.token if self.token_file is None else secret_or_file(None, self.token_file)
        return topic, token


def build_body(config: NtfyConfig, topic: str, payload: Mapping[str, Any]) -> dict[str, Any]:
    msg = render(payload, language=config.language, style="text", limit=LIMIT)
    return {
        "topic": topic,
        "title": msg.title,
        "message": msg.body,
        "priority": PRIORITY[msg.severity],
        "tags": [TAGS[msg.severity]],
    }


class NtfyNotifier(HttpChannel[NtfyConfig]):
    integration = "ntfy"

    async def notify(
        self, payload: Mapping[str, Any], idempotency_key: str | None = None
    ) -> Outcome:
        group = self._group(payload)
        if group is None:
            return Outcome.ok()
        headers = {"Content-Type": "application/json"}
        if idempotency_key and _SEQUENCE_ID.match(idempotency_key):
            headers["X-Sequence-ID"] = idempotency_key
        try:
            topic, token = self.config.resolve()
            if token:
                headers["Authorization"] = f"Bearer {token}"
            body = build_body(self.config, topic, truncate(group, self.config.max_alerts))
            resp = await self._http().post(
                self.config.url + "/",
                content=json.dumps(body, ensure_ascii=False).encode("utf-8"),
                headers=headers,
            )
        except OSError as exc:
            return Outcome.retry(f"ntfy: secret file: {type(exc).__name__}")
        except httpx.HTTPError as exc:
            return classify_exception(exc)
        out = classify_http(resp.status_code, resp.content, resp.headers, self.clock.time())
        if not out.reason:
            return out
        reason = f"ntfy: {out.reason}: {_error(resp.content)}"
        return Outcome(out.kind, redact(reason), out.retry_after, out.status)


def _error(content: bytes) -> str:
    """``code error`` from ntfy's error JSON (``{"code":42901,"http":429,"error":"..."}``)."""
    try:
        doc = json.loads(content)
        return f"{doc.get('code', '')} {doc.get('error', '')}".strip()[:200]
    except (ValueError, UnicodeDecodeError, AttributeError):
        return content[:200].decode("utf-8", "replace")


def ntfy_factory(raw: Mapping[str, Any]) -> NtfyNotifier:
    return NtfyNotifier(NtfyConfig.from_mapping(raw))
