"""``GET /api/v1/digests/{name}/preview``: a configured digest for the window ending now, as
it would be sent (``title``, ``lines``, ``text``), without sending it. Behind
``inferwatch digest --preview NAME``; the daemon answers because only it holds the engine
series and the event log a digest summarises."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from aiohttp import web

from inferwatch.export.amv2 import answer
from inferwatch.notify.digest.text import DigestText

PREVIEW_PATH = "/api/v1/digests/{name}/preview"


@dataclass
class DigestPreview:
    preview: Callable[[str], Awaitable[DigestText]]

    def routes(self) -> list[web.RouteDef]:
        return [web.get(PREVIEW_PATH, self._preview)]

    async def _preview(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        try:
            text = await self.preview(name)
        except KeyError as exc:
            return answer({"error": str(exc.args[0])}, 404)
        return answer({"name": name, "title": text.title, "lines": text.lines, "text": text.text})


__all__ = ["PREVIEW_PATH", "DigestPreview"]
