"""Scraping an engine's /metrics: one polled source per engine with a ``metrics_url``.

A source never parses: ``poll`` returns the exposition text as a ``model.LineRecord`` (``text``
= the whole body, ``path`` = the URL, ``line_no`` = the scrape's sequence number, ``read_at`` =
the time the request started, which is what the counter deltas are divided by). The daemon
routes it like any line record (``Dispatcher.on_lines(source.name, …)``) to
``parsers.promtext.parse_exposition`` and ``derive.engine.metrics.EngineMetricsDeriver``.

The body is streamed and read at most up to ``max_bytes`` (``engines[].body_size_limit``): a
declared or actual size beyond it stops the read at once, without buffering the rest (a 100 MB
body used to be held whole before the check). The whole scrape — connect, headers and body —
has one deadline, ``deadline`` (``engines[].scrape_timeout``): a body that trickles forever ends
there (the per-read timeout alone let one dribbling byte at a time hold a scrape ~100 s).

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

import asyncio

import httpx

from inferwatch.clock import SYSTEM_CLOCK, Clock
from inferwatch.errors import NoData
from inferwatch.model import LineRecord, Record, ScrapeStatus

ACCEPT = "text/plain;version=0.0.4;q=1.0, */*;q=0.1"
MAX_BYTES = 32 * 1024 * 1024
DEADLINE_S = 10.0


class ScrapeError(Exception):
    """The endpoint answered, but not with usable exposition text (status, size)."""


class ScrapeTimeout(ScrapeError):
    """The scrape did not finish within its total deadline (a body that never ends)."""


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
        deadline: float = DEADLINE_S,
        max_bytes: int = MAX_BYTES,
        name: str | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.engine = engine
        self.url = url
        self.name = name or f"scrape:{engine}"
        self.interval = interval
        self.timeout = min(timeout, deadline)
        self.deadline = deadline
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
            async with asyncio.timeout(self.deadline):
                text = await self._fetch()
        except TimeoutError:
            error = f"{self.url} did not finish within the scrape deadline of {self.deadline:g} s"
            self._status(False, started, f"ScrapeTimeout: {error}")
            raise ScrapeTimeout(error) from None
        except (httpx.HTTPError, ScrapeError) as exc:
            self._status(False, started, f"{type(exc).__name__}: {exc}")
            raise
        self._status(True, started, "")
        self._seq += 1
        return LineRecord(self.name, self.url, self._seq, text, started)

    async def _fetch(self) -> str:
        """The body as text, read in chunks and never beyond ``max_bytes``."""
        async with self._http().stream("GET", self.url) as response:
            if response.status_code != httpx.codes.OK:
                raise ScrapeError(f"{self.url} answered HTTP {response.status_code}")
            declared = response.headers.get("Content-Length", "")
            if declared.isdigit() and int(declared) > self._max_bytes:
                raise ScrapeError(
                    f"{self.url} declared {declared} bytes (body_size_limit {self._max_bytes})"
                )
            body = bytearray()
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) > self._max_bytes:
                    raise ScrapeError(
                        f"{self.url} sent more than {self._max_bytes} bytes "
                        "(body_size_limit); the rest was not read"
                    )
            return bytes(body).decode(response.encoding or "utf-8", "replace")

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
