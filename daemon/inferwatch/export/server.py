"""The HTTP side: /metrics, /healthz, /api/v1/status, /api/v1/events, /api/v1/silences (the
status page and the query API register their own routes: export.page, export.query_api).

aiohttp on the daemon's own event loop, bound to loopback by default. Everything served passes
the redactor; the only writes are silences, and those go through :class:`SilenceAPI`, which
validates and persists them (the routes exist only when the daemon passes one).

With a ``web:`` config (exporter-toolkit's keys) it serves HTTPS (``tls_server_config``) and
asks every request, on every endpoint, for one of ``basic_auth_users`` (401 with
``WWW-Authenticate: Basic`` otherwise; :class:`~.webauth.BasicAuth`). A client certificate whose
names are not in ``client_allowed_sans`` gets 403. A reload can change the users; TLS settings
are read at start.

Every write (any method but GET, HEAD and OPTIONS) must say ``Content-Type: application/json``,
as Alertmanager requires: a web page can make a browser send a ``text/plain`` or form POST to
loopback without asking, never a JSON one. Request bodies are capped (64 KiB: :class:`HttpLimits`).

Connections go through :class:`ConnectionGuard` (a cap on open connections, a deadline for a
request's headers) and the server's errors through :class:`ErrorThrottle` (each kind logged
once, then counted), so a flood of half-open connections neither exhausts descriptors nor fills
the log.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST
from prometheus_client.process_collector import ProcessCollector
from prometheus_client.registry import Collector

from inferwatch.config.web import WebConfig, server_context
from inferwatch.export import jsonio
from inferwatch.export.amv2 import SILENCE_V2_PREFIX
from inferwatch.export.collector import StoreCollector
from inferwatch.export.errlog import CAPTURED_LOGGERS, ErrorThrottle
from inferwatch.export.exposition import Exposition, render
from inferwatch.export.guard import ConnectionGuard, HttpLimits
from inferwatch.export.management import RELOAD_PATH
from inferwatch.export.timeparam import parse_time_param
from inferwatch.export.webauth import BasicAuth, peer_names
from inferwatch.notify.silence import SilenceError
from inferwatch.notify.silence_api import SilenceAPI, SilenceNotFoundError, SilencePersistError
from inferwatch.redact import redact_obj
from inferwatch.store.events import EventLog

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def json_exempt(request: web.Request) -> bool:
    """Writes that carry no body and need no JSON type: ``POST /-/reload`` (what ``curl -X
    POST`` sends; it re-reads the file on disk) and amtool's ``DELETE /api/v2/silence/{id}``
    (a DELETE is never a browser's simple request: a page cannot send one without a CORS
    preflight, which the daemon never grants)."""
    if request.path == RELOAD_PATH:
        return True
    return request.method == "DELETE" and request.path.startswith(SILENCE_V2_PREFIX)


StatusFn = Callable[[], dict[str, Any]]
EventQuery = Callable[..., Awaitable[list[dict[str, Any]]]]


@web.middleware
async def require_json_writes(request: web.Request, handler: Handler) -> web.StreamResponse:
    """415 for a write whose Content-Type is not ``application/json`` (parameters allowed)."""
    if (
        request.method not in SAFE_METHODS
        and request.content_type != "application/json"
        and not json_exempt(request)
    ):
        given = request.headers.get("Content-Type", "none")
        return _json(
            {"error": f"writes need Content-Type: application/json (got {given[:100]})"}, 415
        )
    return await handler(request)


def build_registry(collector: StoreCollector) -> Exposition:
    """What /metrics shows: the store's series, then the process metrics."""
    return Exposition(collector, ProcessCollector(registry=None))


class ExportServer:
    def __init__(
        self,
        registry: Collector,
        status: StatusFn,
        events: EventQuery,
        on_scrape: Callable[[float], None] | None = None,
        *,
        alerts: StatusFn | None = None,
        silences: SilenceAPI | None = None,
        limits: HttpLimits | None = None,
        web_config: WebConfig | None = None,
        routes: Sequence[web.RouteDef] = (),
    ) -> None:
        self.registry = registry
        self.status = status
        self.events = events
        self.on_scrape = on_scrape
        self.alerts = alerts
        self.silences = silences
        self.limits = limits or HttpLimits()
        self.errors = ErrorThrottle()
        self.guard = ConnectionGuard(self.limits, self.errors.note)
        self.web = WebConfig()
        self.auth: BasicAuth | None = None
        self._runner: web.AppRunner | None = None
        self.set_web(web_config)
        self.app = web.Application(
            middlewares=[self._track, self._authenticate, require_json_writes],
            client_max_size=self.limits.max_body,
        )
        self.app.add_routes(
            [
                web.get("/metrics", self._metrics),
                web.get("/healthz", self._healthz),
                web.get("/api/v1/status", self._status),
                web.get("/api/v1/events", self._events),
                web.get("/api/v1/alerts", self._alerts),
            ]
        )
        if silences is not None:
            self.app.add_routes(
                [
                    web.get("/api/v1/silences", self._silences_list),
                    web.post("/api/v1/silences", self._silences_create),
                    web.delete("/api/v1/silences/{id}", self._silences_expire),
                ]
            )
        # management (/-/*), the digest preview and the Alertmanager v2 subset
        self.app.add_routes(routes)
        self._listener: asyncio.Server | None = None
        self._capture: logging.Filter | None = None
        self._previous_handler: Any = None
        self.bound: tuple[str, int] | None = None
        self.addresses: list[str] = []  # every address a listening socket is bound to

    def set_web(self, config: WebConfig | None) -> bool:
        """Take a (re)loaded ``web:`` config: the users apply to the next request; False when
        the TLS settings differ from those the server started with (they need a restart)."""
        config = config or WebConfig()
        same_tls = config.tls_server_config == self.web.tls_server_config
        users = config.basic_auth_users
        if users != self.web.basic_auth_users or (users and self.auth is None):
            self.auth = BasicAuth(users) if users else None
        if self._runner is None or same_tls:  # before start: TLS is taken as given
            self.web = config
        else:
            self.web = config.model_copy(update={"tls_server_config": self.web.tls_server_config})
        return same_tls

    @property
    def scheme(self) -> str:
        return "https" if self.web.tls_server_config is not None else "http"

    async def start(self, host: str, port: int) -> tuple[str, int]:
        runner = web.AppRunner(
            self.app, access_log=None, handle_signals=False, **self.limits.handler_args()
        )
        tls = self.web.tls_server_config
        context: ssl.SSLContext | None = None
        if tls is not None:
            try:
                context = server_context(tls)
            except ValueError as exc:  # the files changed since the config was checked
                raise OSError(f"TLS: {exc}") from None
        await runner.setup()
        self._runner = runner
        assert runner.server is not None
        loop = asyncio.get_running_loop()
        self._previous_handler = loop.get_exception_handler()
        loop.set_exception_handler(self.errors.loop_exception)
        self._capture = self.errors.capture()
        for name in CAPTURED_LOGGERS:
            logging.getLogger(name).addFilter(self._capture)
        try:
            self._listener = await loop.create_server(
                self.guard.factory(runner.server),
                host,
                port,
                reuse_address=True,
                # asyncio accepts up to `backlog` connections per wake-up, before the guard sees
                # them: no more than the guard allows, so one burst cannot run out of descriptors
                backlog=min(128, self.limits.max_connections),
                ssl=context,
                # a TLS handshake gets no longer than a request's headers would
                ssl_handshake_timeout=self.limits.header_timeout if context else None,
            )
        except OSError:
            await self.stop()
            raise
        sockets = self._listener.sockets
        self.addresses = [str(sock.getsockname()[0]) for sock in sockets]
        actual = sockets[0].getsockname()[:2] if sockets else (host, port)
        self.bound = (str(actual[0]), int(actual[1]))
        return self.bound

    async def stop(self) -> None:
        listener, self._listener = self._listener, None
        if listener is not None:
            listener.close()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        self.guard.abort_all()
        if listener is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(listener.wait_closed(), 5.0)
        self.errors.flush()
        if self._capture is not None:
            for name in CAPTURED_LOGGERS:
                logging.getLogger(name).removeFilter(self._capture)
            self._capture = None
            asyncio.get_running_loop().set_exception_handler(self._previous_handler)

    def http_status(self) -> dict[str, Any]:
        """For the status API: open connections, the limit, and dropped or failed ones by kind."""
        return {
            "connections": self.guard.open_count,
            "max_connections": self.limits.max_connections,
            "errors": dict(self.errors.totals),
        }

    @web.middleware
    async def _track(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """Tell the guard a request is being served (its header deadline no longer applies)."""
        self.guard.request_started(request.transport)
        try:
            return await handler(request)
        finally:
            self.guard.request_done(request.transport)

    @web.middleware
    async def _authenticate(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """401 without one of ``basic_auth_users``; 403 for a client certificate whose names are
        not in ``client_allowed_sans``. Every endpoint, as exporter-toolkit does."""
        tls = self.web.tls_server_config
        if tls is not None and tls.client_allowed_sans:
            names = peer_names(
                request.transport.get_extra_info("peercert") if request.transport else None
            )
            if not names & set(tls.client_allowed_sans):
                return _json({"error": "the client certificate's names are not allowed"}, 403)
        auth = self.auth
        if auth is not None and not await auth.allows(request.headers.get("Authorization")):
            response = _json({"error": "Unauthorized"}, 401)
            response.headers["WWW-Authenticate"] = 'Basic realm="inferwatch"'
            return response
        return await handler(request)

    async def _metrics(self, _request: web.Request) -> web.Response:
        started = time.perf_counter()
        body = render(self.registry)
        if self.on_scrape is not None:
            self.on_scrape(time.perf_counter() - started)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def _healthz(self, _request: web.Request) -> web.Response:
        return web.Response(text="ok\n")

    async def _status(self, _request: web.Request) -> web.Response:
        return _json(self.status())

    async def _alerts(self, _request: web.Request) -> web.Response:
        return _json(self.alerts() if self.alerts is not None else {"alerts": []})

    async def _events(self, request: web.Request) -> web.Response:
        q = request.query
        now = time.time()
        try:
            since = parse_time_param(q["since"], now) if "since" in q else None
            until = parse_time_param(q["until"], now) if "until" in q else None
        except ValueError as exc:
            return _json({"error": f"since/until: {exc}"}, 400)
        try:
            limit = int(q.get("limit", "100"))
        except ValueError:
            return _json({"error": "limit must be an integer"}, 400)
        types = [t for t in q.get("type", "").split(",") if t] or None
        rows = await self.events(since=since, until=until, types=types, limit=limit)
        return _json({"events": rows})

    async def _silences_list(self, _request: web.Request) -> web.Response:
        assert self.silences is not None
        try:
            return _json(self.silences.list_all())
        except SilencePersistError as exc:
            return _json({"error": str(exc)}, 503)

    async def _silences_create(self, request: web.Request) -> web.Response:
        """Alertmanager's answer: ``{"silenceID": ...}``; 400 names what is wrong."""
        assert self.silences is not None
        try:
            body = jsonio.loads(await request.text())
        except web.HTTPRequestEntityTooLarge:
            limit = self.limits.max_body
            return _json({"error": f"the body is larger than {limit} bytes"}, 413)
        except (jsonio.BodyError, UnicodeDecodeError, LookupError) as exc:
            return _json({"error": str(exc)}, 400)
        try:
            stored = self.silences.create(body)
        except SilenceError as exc:
            return _json({"error": str(exc)}, 400)
        except SilencePersistError as exc:
            return _json({"error": str(exc)}, 500)
        return _json({"silenceID": stored.id})

    async def _silences_expire(self, request: web.Request) -> web.Response:
        assert self.silences is not None
        try:
            expired = self.silences.expire(request.match_info["id"])
        except SilenceNotFoundError as exc:
            return _json({"error": str(exc)}, 404)
        except SilencePersistError as exc:
            return _json({"error": str(exc)}, 500)
        return _json({"silenceID": expired.id, "endsAt": expired.ends_at})


def _json(doc: Any, status: int = 200) -> web.Response:
    return web.Response(
        text=jsonio.dumps(redact_obj(doc)),
        status=status,
        content_type="application/json",
    )


__all__ = ["EventLog", "ExportServer", "build_registry"]
