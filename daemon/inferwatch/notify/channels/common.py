"""The keys every channel's config shares, and the one parser for them.

Every HTTP channel reads ``send_resolved`` (default true), ``max_alerts`` (0 = all),
``http_config`` (``proxy_url``; credentials, TLS and redirects: :mod:`.httpconfig`) and
``timeout`` (or ``http_config.timeout``; seconds or a duration such as ``10s``, default 10 s)
into :class:`CommonOptions`. Chat channels add ``language``
(``en``, ``zh``) and the receiver's own ``title``/``message`` templates (:mod:`.templating`) in
:class:`ChatOptions`. Channel configs inherit one of the two (keyword-only fields, so a
channel's own required fields stay first) and splat :func:`common_fields` or
:func:`chat_fields` into their constructor.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, cast

from inferwatch.durations import DurationError, parse_duration_s
from inferwatch.notify.channels.httpconfig import (
    NO_HTTP_CONFIG,
    HttpClientConfig,
    parse_http_config,
)
from inferwatch.notify.channels.templating import (
    NO_TEMPLATES,
    ChatMessage,
    MessageTemplates,
    render_message,
)
from inferwatch.notify.message import Language, Style, Unit
from inferwatch.redact import register_secret

_SECONDS = re.compile(r"^\d+(?:\.\d+)?$")
LANGUAGES = ("en", "zh")


def parse_duration(value: object, default: float) -> float:
    """Seconds from a number (``10``, ``2.5``) or a Prometheus duration (``10s``, ``500ms``,
    ``1m30s``; :mod:`inferwatch.durations`, which has no fractions: ``1.5s`` is refused)."""
    if value is None:
        return default
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    text = str(value).strip()
    if _SECONDS.match(text):
        return float(text)
    try:
        return parse_duration_s(text)
    except DurationError:
        raise ValueError(f"bad duration {value!r}") from None


@dataclass(frozen=True, slots=True, kw_only=True)
class CommonOptions:
    """What the delivery side of every HTTP channel reads (:class:`.HttpChannel`)."""

    send_resolved: bool = True
    max_alerts: int = 0
    proxy_url: str | None = None
    timeout: float = 10.0
    http: HttpClientConfig = NO_HTTP_CONFIG  # the rest of http_config: auth, TLS, redirects


@dataclass(frozen=True, slots=True, kw_only=True)
class ChatOptions(CommonOptions):
    """:class:`CommonOptions` plus what shapes a chat message."""

    language: Language = "en"
    templates: MessageTemplates = NO_TEMPLATES

    def render_message(
        self,
        payload: Mapping[str, Any],
        *,
        style: Style = "text",
        limit: int = 4096,
        unit: Unit = "bytes",
    ) -> ChatMessage:
        """The message for ``payload``: the default rendering in this receiver's language,
        with its own title/message templates where set."""
        return render_message(self.templates, payload, language=self.language, style=style,
                              limit=limit, unit=unit)  # fmt: skip


def with_defaults(
    item: Mapping[str, Any], language: str, http_config: Mapping[str, Any] | None
) -> dict[str, Any]:
    """One ``<kind>_configs`` entry as its channel reads it: the top-level ``language`` and
    ``global.http_config`` apply unless the entry sets its own (Alertmanager's rule: an
    entry's ``http_config`` replaces the global one whole)."""
    defaults: dict[str, Any] = {"language": language}
    if http_config:
        defaults["http_config"] = http_config
    return {**defaults, **item}


def common_from_mapping(raw: Mapping[str, Any]) -> CommonOptions:
    """The shared keys of one ``<kind>_configs`` entry."""
    http = raw.get("http_config") or {}
    return CommonOptions(
        send_resolved=bool(raw.get("send_resolved", True)),
        max_alerts=int(raw.get("max_alerts", 0)),
        proxy_url=http.get("proxy_url"),
        timeout=parse_duration(raw.get("timeout", http.get("timeout")), 10.0),
        http=parse_http_config(http),
    )


def chat_from_mapping(
    raw: Mapping[str, Any], kind: str, message_keys: Sequence[str] = ("message",)
) -> ChatOptions:
    """The shared keys of a chat channel's entry; a bad language or a template that does not
    parse raises ValueError naming ``kind`` and the key."""
    language = raw.get("language", "en")
    if language not in LANGUAGES:
        raise ValueError(f"{kind}: language must be en or zh")
    return ChatOptions(
        **_as_fields(common_from_mapping(raw)),
        language=cast(Language, language),
        templates=MessageTemplates.from_mapping(raw, kind, message_keys),
    )


def common_fields(raw: Mapping[str, Any]) -> dict[str, Any]:
    """:func:`common_from_mapping` as constructor keywords for a config inheriting it."""
    return _as_fields(common_from_mapping(raw))


def chat_fields(
    raw: Mapping[str, Any], kind: str, message_keys: Sequence[str] = ("message",)
) -> dict[str, Any]:
    """:func:`chat_from_mapping` as constructor keywords for a config inheriting it."""
    return _as_fields(chat_from_mapping(raw, kind, message_keys))


def _as_fields(options: CommonOptions) -> dict[str, Any]:
    return {f.name: getattr(options, f.name) for f in fields(options)}


def check_secret(
    kind: str,
    name: str,
    value: str | None,
    path: Path | None,
    *,
    required: bool = True,
    register: Callable[[str], None] = register_secret,
) -> None:
    """A credential given inline as ``name`` or in ``name_file``: exactly one of them (at most
    one when not ``required``); an inline value is registered for redaction at once."""
    if required and (value is None) == (path is None):
        raise ValueError(f"{kind}: exactly one of {name} and {name}_file must be set")
    if value is not None and path is not None:
        raise ValueError(f"{kind}: at most one of {name} and {name}_file may be set")
    if value is not None:
        register(value)


def secret_fields(raw: Mapping[str, Any], *names: str) -> dict[str, Any]:
    """Each credential's ``name`` and ``name_file`` keys as constructor keywords (the file as a
    path; an empty one counts as unset), checked later by :func:`check_secret`."""
    fields: dict[str, Any] = {}
    for name in names:
        path = raw.get(f"{name}_file")
        fields |= {name: raw.get(name), f"{name}_file": Path(path) if path else None}
    return fields
