"""``GET /``: the status page; ``GET /?part=main`` is the part its script reloads."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from inferwatch.export.page import collect
from inferwatch.export.page.render import render_document, render_main
from inferwatch.export.page.view import PageInputs, build_view
from inferwatch.logsetup import get_logger
from inferwatch.redact import redact_obj
from inferwatch.store.tsdb import SeriesStore

log = get_logger(__name__)
Doc = Callable[[], dict[str, Any]]
EVENTS_SHOWN = 30


@dataclass(slots=True)
class PageSource:
    """Where the page's documents come from; callables, so a reload's new config shows."""

    store: SeriesStore
    now: Callable[[], float]
    status: Doc
    alerts: Doc
    silences: Doc
    events: Callable[..., Awaitable[list[dict[str, Any]]]]
    language: Callable[[], str]
    links: Callable[[], Sequence[tuple[str, str]]]

    async def inputs(self) -> PageInputs:
        t = self.now()
        status = self.status()
        try:
            silences = self.silences().get("silences", [])
        except Exception as exc:  # a broken silences file must not take the page down
            log.warning("status page without silences", error=str(exc))
            silences = []
        return PageInputs(
            now=t,
            language=self.language(),
            status=redact_obj(status),
            alerts=redact_obj(self.alerts().get("alerts", [])),
            silences=redact_obj(silences),
            events=redact_obj(await self.events(limit=EVENTS_SHOWN)),
            samples=collect.samples(self.store, t),
            curves=collect.curves(self.store, t),
            links=self.links(),
        )

    def routes(self) -> list[web.RouteDef]:
        return [web.get("/", self._page)]

    async def _page(self, request: web.Request) -> web.Response:
        view = build_view(await self.inputs())
        main = render_main(view)
        if request.query.get("part") == "main":
            return web.Response(text=main, content_type="text/html")
        body = render_document(view, title=view.words["title"], main=main, refresh=True)
        return web.Response(text=body, content_type="text/html")


__all__ = ["PageSource"]
