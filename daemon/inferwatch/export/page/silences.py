"""Silences as the page shows them: API silences and maintenance flag files, each with the
current alerts it mutes, and each alert with the silences that mute it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from inferwatch.export.page.alerts import AlertView, alert_views
from inferwatch.export.page.samples import stamp
from inferwatch.labels import Matcher


@dataclass(frozen=True, slots=True)
class SilenceView:
    kind: str  # "api" or "file"
    ident: str
    matchers: str
    comment: str
    detail: str  # who and until (API) or the file's path
    active: bool
    mutes: list[str]


def _matchers(docs: Sequence[Mapping[str, Any]]) -> list[Matcher]:
    ops = {(False, True): "=", (False, False): "!=", (True, True): "=~", (True, False): "!~"}
    return [
        Matcher.of(
            str(m["name"]),
            ops[bool(m.get("isRegex")), bool(m.get("isEqual", True))],
            str(m["value"]),
        )
        for m in docs
    ]


def _muted(
    matchers: list[Matcher], alerts: Sequence[AlertView], raw: Sequence[Mapping[str, Any]]
) -> list[str]:
    names = []
    for view, a in zip(alerts, raw, strict=True):
        labels: Mapping[str, str] = a.get("labels", {})
        if all(m.matches(str(labels.get(m.name, ""))) for m in matchers):
            names.append(f"{view.name} {view.labels}".strip())
    return names


def _matcher_text(docs: Sequence[Mapping[str, Any]]) -> str:
    ops = {(False, True): "=", (False, False): "!=", (True, True): "=~", (True, False): "!~"}
    text = ", ".join(
        f'{m["name"]}{ops[bool(m.get("isRegex")), bool(m.get("isEqual", True))]}"{m["value"]}"'
        for m in docs
    )
    return "{" + text + "}"


def silence_views(
    alerts: Sequence[Mapping[str, Any]],
    silences: Sequence[Mapping[str, Any]],
    notify: Mapping[str, Any],
    language: str,
) -> list[SilenceView]:
    """Active and pending API silences, then every configured flag file; each with the current
    alerts it selects."""
    live = sorted(
        (a for a in alerts if a.get("state") in ("firing", "pending")),
        key=lambda a: str(a.get("labels", {}).get("alertname", "")),
    )
    shown = [alert_views([a], language)[0] for a in live]

    def view(kind: str, doc: Mapping[str, Any], detail: str, active: bool) -> SilenceView:
        matchers = doc.get("matchers", [])
        return SilenceView(
            kind=kind,
            ident=str(doc.get("id", "")),
            matchers=_matcher_text(matchers),
            comment=str(doc.get("comment", "")),
            detail=detail,
            active=active,
            mutes=_muted(_matchers(matchers), shown, live) if active else [],
        )

    out = []
    for s in silences:
        state = str(s.get("status", {}).get("state", ""))
        if state != "expired":
            detail = f"{s.get('createdBy', '')} · {stamp(s.get('endsAt'))}"
            out.append(view("api", s, detail, state == "active"))
    out += [
        view("file", f, str(f.get("path", "")), bool(f.get("active")))
        for f in notify.get("silence_files", [])
    ]
    return out


def with_silences(alerts: list[AlertView], silences: list[SilenceView]) -> list[AlertView]:
    out = []
    for a in alerts:
        shown = f"{a.name} {a.labels}".strip()
        muted = tuple(s.matchers for s in silences if s.active and shown in s.mutes)
        out.append(replace(a, muted_by=muted) if muted else a)
    return out


__all__ = ["SilenceView", "silence_views", "with_silences"]
