"""Alertmanager 0.25's API v2 shapes (api/v2/openapi.yaml) built from inferwatch's own objects.

amtool parses the answers with go-swagger, which refuses a document that lacks a required
field, so every required field of ``gettableSilence``, ``gettableAlert`` and
``alertmanagerStatus`` is always present. Times are RFC 3339 in UTC.

Mapping onto inferwatch:
- a silence's ``updatedAt`` is its end once expired, else its start (silences are never edited
  in place: an update expires the old one and adds a new one, as Alertmanager does);
- only firing alerts are Alertmanager's alerts (pending ones are never sent); ``startsAt`` is
  when the alert fired, ``updatedAt`` its last evaluation, ``endsAt`` four minutes after that
  (what Prometheus sends); ``receivers`` are the routes' receivers for its labels;
  ``status.state`` is ``suppressed`` when a silence, a maintenance flag file (its id is
  ``file:PATH``) or an inhibiting alert (by fingerprint) mutes it, else ``active``.
"""

from __future__ import annotations

import platform
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from inferwatch import __version__
from inferwatch.alerts.model import Alert
from inferwatch.labels import Labels, Matcher
from inferwatch.notify.matchers import matches, parse_matchers
from inferwatch.notify.payload import rfc3339
from inferwatch.notify.silence import Silence, SilenceState

ENDS_AFTER_S = 240.0  # Prometheus: 4 x max(resend delay 1 m, evaluation interval)
_OPS = {"=": (False, True), "!=": (False, False), "=~": (True, True), "!~": (True, False)}


class FilterError(ValueError):
    """A bad query parameter (HTTP 400)."""


def gettable_silence(silence: Silence, now: float) -> dict[str, Any]:
    state = silence.state(now)
    updated = silence.ends_at if state is SilenceState.EXPIRED else silence.starts_at
    matchers = []
    for m in silence.matchers:
        is_regex, is_equal = _OPS[m.op.value]
        matchers.append(
            {"name": m.name, "value": m.value, "isRegex": is_regex, "isEqual": is_equal}
        )
    return {
        "id": silence.id,
        "status": {"state": state.value},
        "updatedAt": rfc3339(updated),
        "matchers": matchers,
        "startsAt": rfc3339(silence.starts_at),
        "endsAt": rfc3339(silence.ends_at),
        "createdBy": silence.created_by,
        "comment": silence.comment,
    }


def parse_filter(values: Sequence[str]) -> tuple[Matcher, ...]:
    """The ``filter`` parameters (each one matcher or a braced list, as amtool sends them)."""
    out: list[Matcher] = []
    for value in values:
        try:
            out.extend(parse_matchers(value))
        except ValueError as exc:
            raise FilterError(f"bad filter {value!r}: {exc}") from None
    return tuple(out)


def silence_selected(silence: Silence, wanted: Iterable[Matcher]) -> bool:
    """Alertmanager's rule: the filter matchers hold for the silence's matchers read as labels."""
    labels: Labels = tuple(sorted({m.name: m.value for m in silence.matchers}.items()))
    return matches(wanted, labels)


def flag(query: Mapping[str, str], name: str) -> bool:
    """A boolean query parameter; absent means true (Alertmanager's defaults)."""
    value = query.get(name, "true").lower()
    if value not in ("true", "false", "1", "0"):
        raise FilterError(f"{name} must be true or false, not {value!r}")
    return value in ("true", "1")


@dataclass(frozen=True)
class AlertView:
    """One firing alert and what mutes it."""

    alert: Alert
    receivers: Sequence[str]
    silenced_by: Sequence[str] = ()
    inhibited_by: Sequence[str] = ()

    @property
    def state(self) -> str:
        return "suppressed" if self.silenced_by or self.inhibited_by else "active"


@dataclass(frozen=True)
class AlertFilter:
    matchers: tuple[Matcher, ...] = ()
    active: bool = True
    silenced: bool = True
    inhibited: bool = True
    receiver: Matcher | None = None

    @classmethod
    def of(cls, query: Mapping[str, str], filters: Sequence[str]) -> AlertFilter:
        receiver = query.get("receiver")
        try:
            wanted = Matcher.of("receiver", "=~", receiver) if receiver else None
        except Exception as exc:  # re.error, with its message
            raise FilterError(f"bad receiver regex {receiver!r}: {exc}") from None
        return cls(
            parse_filter(filters),
            active=flag(query, "active"),
            silenced=flag(query, "silenced"),
            inhibited=flag(query, "inhibited"),
            receiver=wanted,
        )

    def keeps(self, view: AlertView) -> bool:
        if not self.active and view.state == "active":
            return False
        if not self.silenced and view.silenced_by:
            return False
        if not self.inhibited and view.inhibited_by:
            return False
        if self.receiver is not None and not any(self.receiver.matches(r) for r in view.receivers):
            return False
        return matches(self.matchers, view.alert.labels)


def gettable_alert(view: AlertView) -> dict[str, Any]:
    alert = view.alert
    updated = alert.last_eval or alert.fired_at or alert.active_at
    return {
        "labels": dict(alert.labels),
        "annotations": dict(alert.annotations),
        "receivers": [{"name": r} for r in view.receivers],
        "fingerprint": alert.fingerprint,
        "startsAt": rfc3339(alert.fired_at or alert.active_at),
        "updatedAt": rfc3339(updated),
        "endsAt": rfc3339(updated + ENDS_AFTER_S),
        "status": {
            "state": view.state,
            "silencedBy": list(view.silenced_by),
            "inhibitedBy": list(view.inhibited_by),
        },
    }


def alertmanager_status(started_at: float, config_text: str) -> dict[str, Any]:
    """``alertmanagerStatus``: no cluster (``disabled``), inferwatch's version, a config
    summary (the file holds secrets and is not served)."""
    return {
        "cluster": {"name": "", "status": "disabled", "peers": []},
        "versionInfo": {
            "version": __version__,
            "revision": "",
            "branch": "",
            "buildUser": "inferwatch",
            "buildDate": "",
            "goVersion": f"python{platform.python_version()}",
        },
        "config": {"original": config_text},
        "uptime": rfc3339(started_at),
    }


__all__ = [
    "AlertFilter",
    "AlertView",
    "FilterError",
    "alertmanager_status",
    "gettable_alert",
    "gettable_silence",
    "parse_filter",
    "silence_selected",
]
