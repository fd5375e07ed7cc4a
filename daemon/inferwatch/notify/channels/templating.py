"""A receiver's own ``title`` and ``message``: Go templates over Alertmanager's notification data.

Chat receivers accept Alertmanager's ``title`` and ``message`` keys. Each is a Go text/template
run by the rules engine's own interpreter (bounded, nothing reaches Python beyond its function
table) with Alertmanager's data as dot: ``.Receiver``, ``.Status``, ``.Alerts`` (each with
``.Status``, ``.Labels``, ``.Annotations``, ``.StartsAt``, ``.EndsAt``, ``.GeneratorURL``,
``.Fingerprint``; ``.Alerts.Firing`` and ``.Alerts.Resolved`` filter them), ``.GroupLabels``,
``.CommonLabels``, ``.CommonAnnotations``, ``.ExternalURL``. A template that does not parse is
a config error when the channel is built; one that fails while running leaves that part to the
default rendering plus a short note, so the message itself is never lost. The user's text is
sent as written (no escaping: it is their markup), cut to the channel's limit with a marker.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from inferwatch.gotemplate.eval import AlertList
from inferwatch.gotemplate.templates import (
    Template,
    TemplateExecError,
    TemplateParseError,
    compile_notification_template,
    expand_notification,
)
from inferwatch.logsetup import get_logger
from inferwatch.notify.message import Language, Style, Unit, fit, render, size
from inferwatch.redact import redact

log = get_logger("inferwatch.notify.templates")

NOTE = {
    "en": "[{field} template failed: default text shown]",
    "zh": "[{field} 模板出错：显示默认内容]",
}


@dataclass(frozen=True, slots=True)
class MessageTemplates:
    """The parsed ``title`` and ``message`` of one receiver entry; None = the default text."""

    title: Template | None = None
    message: Template | None = None

    @classmethod
    def from_mapping(
        cls, raw: Mapping[str, Any], kind: str, message_keys: Sequence[str] = ("message",)
    ) -> MessageTemplates:
        """Parse the keys now, so a broken template is a config error naming its field.
        ``message_keys`` lists accepted spellings (Slack's Alertmanager name is ``text``)."""
        given = [k for k in message_keys if raw.get(k) is not None]
        if len(given) > 1:
            raise ValueError(f"{kind}: set only one of {' and '.join(given)}")
        problems: list[tuple[str, str]] = []
        title = _parse(raw, "title", kind, problems)
        message = _parse(raw, given[0], kind, problems) if given else None
        if problems:
            raise TemplateProblems(problems)
        return cls(title=title, message=message)


class TemplateProblems(ValueError):
    """Every template of one receiver entry that does not parse, each with its key, so
    ``inferwatch check`` reports them all, each at its own line."""

    def __init__(self, problems: list[tuple[str, str]]) -> None:
        super().__init__("; ".join(message for _, message in problems))
        self.problems = problems


NO_TEMPLATES = MessageTemplates()


def _parse(
    raw: Mapping[str, Any], key: str, kind: str, problems: list[tuple[str, str]]
) -> Template | None:
    text = raw.get(key)
    if text is None:
        return None
    if not isinstance(text, str):
        problems.append((key, f"{kind}: {key} must be a string (a Go template)"))
        return None
    try:
        return compile_notification_template(text, key)
    except TemplateParseError as exc:
        problems.append((key, redact(f"{kind}: {key} template does not parse: {exc}")))
        return None


def template_data(payload: Mapping[str, Any]) -> dict[str, Any]:
    """Alertmanager's notification data for a v4 payload, as plain mappings."""
    alerts = AlertList(
        {
            "Status": str(a.get("status", "")),
            "Labels": dict(a.get("labels") or {}),
            "Annotations": dict(a.get("annotations") or {}),
            "StartsAt": str(a.get("startsAt", "")),
            "EndsAt": str(a.get("endsAt", "")),
            "GeneratorURL": str(a.get("generatorURL", "")),
            "Fingerprint": str(a.get("fingerprint", "")),
        }
        for a in payload.get("alerts", [])
    )
    return {
        "Receiver": str(payload.get("receiver", "")),
        "Status": str(payload.get("status", "")),
        "Alerts": alerts,
        "GroupLabels": dict(payload.get("groupLabels") or {}),
        "CommonLabels": dict(payload.get("commonLabels") or {}),
        "CommonAnnotations": dict(payload.get("commonAnnotations") or {}),
        "ExternalURL": str(payload.get("externalURL", "")),
    }


@dataclass(frozen=True, slots=True)
class ChatMessage:
    """What a chat channel sends. ``own_title``/``own_body``: the text is the user's template
    output, to be sent as written (a channel escapes only its own default text)."""

    title: str
    body: str
    severity: str
    own_title: bool = False
    own_body: bool = False


def render_message(
    templates: MessageTemplates,
    payload: Mapping[str, Any],
    *,
    language: Language = "en",
    style: Style = "text",
    limit: int = 4096,
    unit: Unit = "bytes",
) -> ChatMessage:
    """The default :func:`~inferwatch.notify.message.render`, with the receiver's templates
    in place of its title and body where set; the severity always comes from the alerts."""
    data = template_data(payload) if templates.title or templates.message else {}
    title = _expand(templates.title, data)
    body = _expand(templates.message, data)
    notes = [NOTE[language].format(field=f) for f, t in (("title", title), ("message", body))
             if t == ""]  # fmt: skip
    note = ("\n\n" + " ".join(notes)) if notes else ""
    room = max(0, limit - size(note, unit))
    default = render(payload, language=language, style=style, limit=room, unit=unit)
    return ChatMessage(
        title=fit(title, limit, unit) if title else default.title,
        body=(fit(body, room, unit) if body else default.body) + note,
        severity=default.severity,
        own_title=bool(title),
        own_body=bool(body),
    )


def _expand(template: Template | None, data: Mapping[str, Any]) -> str | None:
    """The expansion; None without a template, "" when it failed or came out blank."""
    if template is None:
        return None
    try:
        text = expand_notification(template, data)
    except TemplateExecError as exc:
        log.warning("notification template failed", field=template.name, error=redact(str(exc)))
        return ""
    if not text.strip():
        log.warning("notification template expanded to nothing", field=template.name)
        return ""
    return text.strip() if template.name == "title" else text
