"""Connection limits for the HTTP server: a cap on open connections and a deadline for headers.

aiohttp has no deadline for a request's headers (older 3.x versions wait for them forever), so
a client that sends half a request and stops holds a descriptor for as long as it likes; enough
of them exhaust the open-file limit, after which ``accept()`` fails on every loop turn, /metrics
stops answering and asyncio logs a traceback for each failure. This module wraps each aiohttp
protocol:

* a connection waiting for a request (its first, or the next on a keep-alive connection) is
  closed after ``header_timeout`` (first) or ``idle_timeout`` (next) seconds; one that had sent
  part of a request gets a ``408`` first;
* at most ``max_connections`` are open at once (a quarter of the open-file limit, at most 256).
  A new connection beyond that closes the oldest one that is still waiting for a request, so a
  flood of idle connections never locks out a scrape; when all are busy the new one gets a
  ``503`` and is closed at once.

The export server's middleware tells the guard when a request starts and ends
(:meth:`ConnectionGuard.request_started`, :meth:`ConnectionGuard.request_done`).
"""

from __future__ import annotations

import asyncio
import resource
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

REPLY_408 = b"HTTP/1.1 408 Request Timeout\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
REPLY_503 = b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
CONNECTIONS_CEILING = 256
MAX_BODY = 64 * 1024


def default_max_connections() -> int:
    """A quarter of the soft open-file limit, between 16 and 256: the rest of the daemon (logs,
    state, sockets to engines and receivers) keeps the other three quarters."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return CONNECTIONS_CEILING
    return max(16, min(CONNECTIONS_CEILING, soft // 4))


@dataclass(frozen=True, slots=True)
class HttpLimits:
    """What one client may hold: connections, time to send a request, request sizes."""

    max_connections: int = field(default_factory=default_max_connections)
    header_timeout: float = 10.0  # connect → the first request's headers complete
    idle_timeout: float = 30.0  # a keep-alive connection between requests
    max_body: int = MAX_BODY
    max_line: int = 8190  # request line and each header line
    max_field: int = 8190

    def handler_args(self) -> dict[str, Any]:
        """Keyword arguments for aiohttp's request handler (``AppRunner(**kwargs)``)."""
        return {
            "keepalive_timeout": self.idle_timeout,
            "max_line_size": self.max_line,
            "max_field_size": self.max_field,
        }


Report = Callable[[str, str], None]


class ConnectionGuard:
    """The open connections of one server, oldest first; ``report(kind, detail)`` counts drops."""

    def __init__(self, limits: HttpLimits, report: Report) -> None:
        self.limits = limits
        self._report = report
        self._open: dict[_Guarded, None] = {}  # insertion order: oldest first
        self._by_transport: dict[asyncio.BaseTransport, _Guarded] = {}

    def factory(self, inner: Callable[[], asyncio.BaseProtocol]) -> Callable[[], asyncio.Protocol]:
        """A protocol factory for ``loop.create_server`` wrapping aiohttp's."""
        return lambda: _Guarded(self, inner)

    @property
    def open_count(self) -> int:
        return len(self._open)

    def request_started(self, transport: asyncio.BaseTransport | None) -> None:
        conn = self._by_transport.get(transport) if transport is not None else None
        if conn is not None:
            conn.busy()

    def request_done(self, transport: asyncio.BaseTransport | None) -> None:
        conn = self._by_transport.get(transport) if transport is not None else None
        if conn is not None:
            conn.waiting(self.limits.idle_timeout)

    def abort_all(self) -> None:
        for conn in list(self._open):
            conn.drop()

    def _admit(self, conn: _Guarded) -> bool:
        if len(self._open) >= self.limits.max_connections:
            victim = next((c for c in self._open if c.is_waiting), None)
            if victim is None:
                self._report(
                    "connection refused: every slot busy",
                    f"{len(self._open)} connections open, limit {self.limits.max_connections}",
                )
                return False
            self._report(
                "connection closed to make room: it had not sent a request",
                f"limit {self.limits.max_connections} open connections reached",
            )
            victim.drop()
        self._open[conn] = None
        assert conn.transport is not None
        self._by_transport[conn.transport] = conn
        return True

    def _release(self, conn: _Guarded) -> None:
        self._open.pop(conn, None)
        if conn.transport is not None:
            self._by_transport.pop(conn.transport, None)


class _Guarded(asyncio.Protocol):
    """aiohttp's protocol behind a deadline for each request's headers."""

    def __init__(self, guard: ConnectionGuard, inner: Callable[[], asyncio.BaseProtocol]) -> None:
        self._guard = guard
        self._inner = cast(asyncio.Protocol, inner())
        self.transport: asyncio.Transport | None = None
        self.is_waiting = True
        self._partial = False  # bytes of a request arrived while waiting
        self._timer: asyncio.TimerHandle | None = None
        self._timeout = guard.limits.header_timeout
        self._admitted = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)
        if not self._guard._admit(self):
            self.transport.write(REPLY_503)
            self.transport.close()
            return
        self._admitted = True
        self.waiting(self._guard.limits.header_timeout)
        self._inner.connection_made(transport)

    def data_received(self, data: bytes) -> None:
        if not self._admitted:
            return
        if self.is_waiting:
            self._partial = True
        self._inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self._inner.eof_received() if self._admitted else None

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel()
        if self._admitted:
            self._admitted = False
            self._guard._release(self)
            self._inner.connection_lost(exc)

    def pause_writing(self) -> None:
        if self._admitted:
            self._inner.pause_writing()

    def resume_writing(self) -> None:
        if self._admitted:
            self._inner.resume_writing()

    # -- states -----------------------------------------------------------------------------

    def waiting(self, timeout: float) -> None:
        """No request in progress: the next one must arrive within ``timeout`` seconds."""
        self.is_waiting, self._partial, self._timeout = True, False, timeout
        self._cancel()
        self._timer = asyncio.get_running_loop().call_later(timeout, self._expired)

    def busy(self) -> None:
        self.is_waiting = False
        self._cancel()

    def drop(self) -> None:
        """Close now (to make room, or at stop): the descriptor is freed at once."""
        self._cancel()
        self._guard._release(self)
        if self.transport is not None:
            self.transport.abort()

    def _expired(self) -> None:
        self._timer = None
        if not self.is_waiting or self.transport is None:
            return
        if self._partial:
            self._guard._report(
                "request headers not completed in time",
                f"closed with 408 after waiting {self._timeout:g}s for the rest of a request",
            )
            self.transport.write(REPLY_408)
        self._guard._release(self)
        self.transport.close()

    def _cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


__all__ = ["MAX_BODY", "ConnectionGuard", "HttpLimits", "default_max_connections"]
