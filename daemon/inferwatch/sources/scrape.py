"""Scraping an engine's /metrics: one polled source per engine with a ``metrics_url``.

A source never parses: ``poll`` returns the exposition text as a ``model.LineRecord`` (``text``
= the whole body, ``path`` = the URL, ``line_no`` = the scrape's sequence number, ``read_at`` =
the time the request started, which is what the counter deltas are divided by). The daemon
routes it like any line record (``Dispatcher.on_lines(source.name, …)``) to
``parsers.promtext.parse_exposition`` and ``derive.engine.metrics.EngineMetricsDeriver``.

Failures — connection refused, a timeout, a non-200 answer, an oversized body — are raised, so
the supervisor counts them (``inferwatch_source_errors_total{source,stage="poll"}``) and marks
the source down. Every change of up/down (and the first result) is also a record of its own, a
``model.ScrapeStatus`` that the supervisor takes from :meth:`ScrapeSource.notices` and emits on
the same queue, before the body: the daemon then ends the /metrics series
(``EngineMetricsDeriver.down``) and hands the speed series back to the log
(``EngineRateArbiter.metrics_down``). A 200 with an empty body is up with no samples (vLLM #8612).

The HTTP client ignores proxy variables (``trust_env=False``): on the owner's host an
``all_proxy`` hijacked calls to the local engine (reference/host.md "Environment traps").
"""

from __future__ import annotations

import httpx

from inferwatch.clock import SYSTEM_CLOCK, Clock
from inferwatch.errors import NoData
from inferwatch.model import LineRecord, Record, ScrapeStatus

ACCEPT = "text/plain;version=0.0.4;q=1.0, */*;q=0.1"
MAX_BYTES = 32 * 1024 * 1024


class ScrapeError(Exception):
    """The endpoint answered, but not with usable exposition text (status, size)."""


class ScrapeSource:
    """A ``PolledSource``: the scheduler calls ``poll`` every ``interval`` seconds."""

    def __init__(
        self,
        engine: str,
        url: str,
        *,
        clock: Clock = SYSTEM_CLOCK,
        interval: float = 10.0,
        timeout: float = 5.0,
        max_bytes: int = MAX_BYTES,
        name: str | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.engine = engine
        self.url = url
        self.name = name or f"scrape:{engine}"
        self.interval = interval
        self.timeout = timeout
        self.up: bool | None = None
        self.last_error = ""
        self._clock = clock
        self._max_bytes = max_bytes
        self._notices: list[Record] = []
        self._transport = transport
        self._client: httpx.AsyncClient | None = None
        self._seq = 0

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = httpx.AsyncClient(
                trust_env=False,
                timeout=httpx.Timeout(self.timeout),
                follow_redirects=False,
                headers={"Accept": ACCEPT},
                transport=self._transport,
            )
        return self._client

    async def poll(self) -> LineRecord:
        started = self._clock.time()
        try:
            response = await self._http().get(self.url)
            if response.status_code != httpx.codes.OK:
                raise ScrapeError(f"{self.url} answered HTTP {response.status_code}")
            body = response.content
            if len(body) > self._max_bytes:
                raise ScrapeError(f"{self.url} sent {len(body)} bytes (limit {self._max_bytes})")
            text = body.decode(response.encoding or "utf-8", "replace")
        except (httpx.HTTPError, ScrapeError) as exc:
            self._status(False, started, f"{type(exc).__name__}: {exc}")
            raise
        self._status(True, started, "")
        self._seq += 1
        return LineRecord(self.name, self.url, self._seq, text, started)

    def _status(self, up: bool, at: float, error: str) -> None:
        changed = self.up is not up
        self.up = up
        self.last_error = error
        if changed:
            self._notices.append(ScrapeStatus(self.name, self.engine, up, at, error))

    def notices(self) -> list[Record]:
        """Records that say how the last poll went (an up/down change), taken once."""
        out, self._notices = self._notices, []
        return out

    async def aclose(self) -> None:
        """Close the connection pool (the daemon calls it at shutdown)."""
        if self._client is not None:
            await self._client.aclose()
            self._client = None


class ProbeScrapeSource(ScrapeSource):
    """The embedded default's guess (an engine at 127.0.0.1:8000): a refused connection means
    there is no engine here, which is "no data", not an error worth counting."""

    async def poll(self) -> LineRecord:
        try:
            return await super().poll()
        except httpx.ConnectError:
            raise NoData(f"no engine answers at {self.url}") from None
