"""An Alertmanager API v2 subset, enough for Debian's ``amtool`` 0.25 against the daemon.

``GET/POST /api/v2/silences``, ``GET/DELETE /api/v2/silence/{id}``, ``GET /api/v2/alerts``
(``filter``, ``active``, ``silenced``, ``inhibited``, ``receiver`` as amtool sends them) and
``GET /api/v2/status``. Silences are the daemon's own (the same store as ``/api/v1/silences``,
validated and saved by :class:`SilenceAPI`); alerts are the rules' firing alerts, muted as the
notification pipeline mutes them. Errors are a JSON string, as Alertmanager answers them.
Shapes: :mod:`inferwatch.export.amv2_shapes`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aiohttp import web

from inferwatch.alerts.model import Alert, AlertState
from inferwatch.clock import Clock
from inferwatch.export import jsonio
from inferwatch.export.amv2_shapes import (
    AlertFilter,
    AlertView,
    FilterError,
    alertmanager_status,
    gettable_alert,
    gettable_silence,
    parse_filter,
    silence_selected,
)
from inferwatch.notify.silence import SilenceError
from inferwatch.notify.silence_api import SilenceAPI, SilenceNotFoundError, SilencePersistError
from inferwatch.redact import redact_obj

if TYPE_CHECKING:
    from inferwatch.notify.service import NotifyService


SILENCE_V2_PREFIX = "/api/v2/silence/"


def answer(doc: Any, status: int = 200) -> web.Response:
    return web.Response(
        text=jsonio.dumps(redact_obj(doc)), status=status, content_type="application/json"
    )


@dataclass
class AlertmanagerV2:
    silences: SilenceAPI
    alerts: Callable[[], list[Alert]]
    notify: Callable[[], NotifyService | None]
    config_text: Callable[[], str]
    clock: Clock
    started_at: float = 0.0

    def routes(self) -> list[web.RouteDef]:
        return [
            web.get("/api/v2/silences", self._silences),
            web.post("/api/v2/silences", self._post_silence),
            web.get(SILENCE_V2_PREFIX + "{id}", self._silence),
            web.delete(SILENCE_V2_PREFIX + "{id}", self._delete_silence),
            web.get("/api/v2/alerts", self._alerts),
            web.get("/api/v2/status", self._status),
        ]

    async def _silences(self, request: web.Request) -> web.Response:
        try:
            wanted = parse_filter(request.query.getall("filter", []))
            found = self.silences.all()
        except FilterError as exc:
            return answer(str(exc), 400)
        except SilencePersistError as exc:
            return answer(str(exc), 503)
        now = self.clock.time()
        return answer([gettable_silence(s, now) for s in found if silence_selected(s, wanted)])

    async def _silence(self, request: web.Request) -> web.Response:
        try:
            found = self.silences.get(request.match_info["id"])
        except SilenceNotFoundError as exc:
            return answer(str(exc), 404)
        except SilencePersistError as exc:
            return answer(str(exc), 503)
        return answer(gettable_silence(found, self.clock.time()))

    async def _post_silence(self, request: web.Request) -> web.Response:
        """A new silence; with an ``id``, Alertmanager's update: the old one is expired and a
        new one takes its place (the answer names the new id)."""
        try:
            body = jsonio.loads(await request.text())
        except web.HTTPRequestEntityTooLarge:
            return answer("the body is too large", 413)
        except (jsonio.BodyError, UnicodeDecodeError, LookupError) as exc:
            return answer(str(exc), 400)
        replaces = body.pop("id", None) if isinstance(body, dict) else None
        try:
            if replaces:
                self.silences.get(str(replaces))  # 404 before anything changes
            stored = self.silences.create(body)
            if replaces:
                self.silences.expire(str(replaces))
        except SilenceNotFoundError as exc:
            return answer(str(exc), 404)
        except SilenceError as exc:
            return answer(str(exc), 400)
        except SilencePersistError as exc:
            return answer(str(exc), 500)
        return answer({"silenceID": stored.id})

    async def _delete_silence(self, request: web.Request) -> web.Response:
        try:
            self.silences.expire(request.match_info["id"])
        except SilenceNotFoundError as exc:
            return answer(str(exc), 404)
        except SilencePersistError as exc:
            return answer(str(exc), 500)
        return web.Response(status=200)

    async def _alerts(self, request: web.Request) -> web.Response:
        try:
            wanted = AlertFilter.of(request.query, request.query.getall("filter", []))
        except FilterError as exc:
            return answer(str(exc), 400)
        views = self.views()
        return answer([gettable_alert(v) for v in views if wanted.keeps(v)])

    def views(self) -> list[AlertView]:
        """The firing alerts with their receivers and what mutes them now."""
        firing = [a for a in self.alerts() if a.state is AlertState.FIRING]
        notify = self.notify()
        if notify is None:
            return [AlertView(a, []) for a in firing]
        now = self.clock.time()
        fingerprints = {a.labels: a.fingerprint for a in firing}
        out = []
        for alert in firing:
            receivers = dict.fromkeys(node.receiver for node in notify.tree.match(alert.labels))
            inhibitors = notify.inhibitor.inhibited_by(alert.labels)
            out.append(
                AlertView(
                    alert,
                    list(receivers),
                    notify.silencer.muted_by(alert.labels, now),
                    sorted({fingerprints.get(src, "") for src in inhibitors} - {""}),
                )
            )
        return out

    async def _status(self, _request: web.Request) -> web.Response:
        return answer(alertmanager_status(self.started_at, self.config_text()))


__all__ = ["SILENCE_V2_PREFIX", "AlertmanagerV2"]
