"""Prometheus's management endpoints: ``/-/healthy``, ``/-/ready`` and ``/-/reload``.

- ``/-/healthy`` answers 200 while the HTTP server runs (GET and HEAD), as Prometheus's does.
- ``/-/ready`` answers 503 until the daemon is ready, then 200. The daemon is *ready* once its
  sources are started and the first rule evaluation has run (the first tick): from then on an
  alert that should fire does. Until then a load balancer or ``systemctl``-side check waits.
- ``/-/reload`` (POST or PUT; GET answers 405, as Prometheus) does what SIGHUP does and answers
  when the reload is over: 200, or 500 with the problems (``PATH:LINE:COL: …``); a bad file
  never stops the daemon, it keeps running the previous config. The reload itself parses the
  file in a worker thread (:meth:`Daemon.reload`), never on the event loop.

The reload route accepts a body-less POST without ``Content-Type: application/json`` (what
``curl -X POST`` sends): it changes nothing a caller chooses, it re-reads the file on disk.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from aiohttp import web

RELOAD_PATH = "/-/reload"
Reload = Callable[[], Awaitable[str | None]]
"""Reload the config; None when it worked, else the problems as text."""


@dataclass
class Management:
    ready: Callable[[], bool]
    reload: Reload

    def routes(self) -> list[web.RouteDef]:
        return [
            web.get("/-/healthy", self._healthy),  # aiohttp adds HEAD for GET routes
            web.get("/-/ready", self._ready),
            web.post(RELOAD_PATH, self._reload),
            web.put(RELOAD_PATH, self._reload),
            web.get(RELOAD_PATH, self._only_post, allow_head=False),
        ]

    async def _healthy(self, _request: web.Request) -> web.Response:
        return web.Response(text="inferwatch is Healthy.\n")

    async def _ready(self, _request: web.Request) -> web.Response:
        if self.ready():
            return web.Response(text="inferwatch is Ready.\n")
        return web.Response(text="Service Unavailable\n", status=503)

    async def _reload(self, _request: web.Request) -> web.Response:
        problem = await self.reload()
        if problem is None:
            return web.Response(text="config reloaded\n")
        return web.Response(text=f"failed to reload config: {problem}\n", status=500)

    async def _only_post(self, _request: web.Request) -> web.Response:
        return web.Response(
            text="Only POST or PUT requests allowed\n", status=405, headers={"Allow": "POST, PUT"}
        )


__all__ = ["RELOAD_PATH", "Management", "Reload"]
