"""A provider's endpoint on 127.0.0.1 for the channel tests (each test scripts its answers)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager

from aiohttp import web

from conftest import free_port

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@asynccontextmanager
async def serve_posts(
    paths: Sequence[str], handler: Handler, release: asyncio.Event, suffix: str = ""
) -> AsyncIterator[str]:
    """Serve POSTs to ``paths`` with ``handler``; yields the base URL (plus ``suffix``). On
    exit ``release`` is set, so a handler holding a request open (a timeout test) returns."""
    app = web.Application()
    for path in paths:
        app.router.add_post(path, handler)
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        yield f"http://127.0.0.1:{port}{suffix}"
    finally:
        release.set()
        await runner.cleanup()
