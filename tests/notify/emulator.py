"""A provider's endpoint on 127.0.0.1 for the channel tests (each test scripts its answers)."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager

from aiohttp import web

from conftest import free_port

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@asynccontextmanager
async def serve_posts(
    paths: Sequence[str],
    handler: Handler,
    release: asyncio.Event,
    suffix: str = "",
    ssl_context: ssl.SSLContext | None = None,
) -> AsyncIterator[str]:
    """Serve POSTs to ``paths`` with ``handler``; yields the base URL (plus ``suffix``). On
    exit ``release`` is set, so a handler holding a request open (a timeout test) returns.
    With ``ssl_context`` it serves HTTPS."""
    app = web.Application()
    for path in paths:
        app.router.add_post(path, handler)
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port, ssl_context=ssl_context).start()
    scheme = "https" if ssl_context is not None else "http"
    try:
        yield f"{scheme}://127.0.0.1:{port}{suffix}"
    finally:
        release.set()
        await runner.cleanup()
