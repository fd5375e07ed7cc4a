"""The /metrics scrape source against a real HTTP server on 127.0.0.1.

The server (http.server in a thread) answers with recorded exposition text from
tests/fixtures/engine/ (MODELLED, see the files' headers), one queued answer per request, and
can fail, stall or go away. Waits are bounded by the client's timeout; nothing sleeps.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from conftest import free_port
from inferwatch.clock import FakeClock
from inferwatch.derive.effects import GaugeSet
from inferwatch.derive.engine import names as n
from inferwatch.derive.engine.metrics import EngineMetricsDeriver
from inferwatch.labels import make_labels
from inferwatch.model import LineRecord, Record, ScrapeStatus
from inferwatch.parsers.promtext import parse_exposition
from inferwatch.sources.scrape import ScrapeError, ScrapeSource, ScrapeTimeout

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "engine"
E0 = make_labels({"engine": "vllm", "dp_rank": "0"})


class Engine:
    """A fake engine's /metrics: answers (status, body) in order, repeating the last one."""

    def __init__(self) -> None:
        self.answers: list[tuple[int, bytes]] = []
        self.requests: list[dict[str, str]] = []
        self.release = threading.Event()
        self.stall = False
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                outer.requests.append(dict(self.headers))
                if outer.stall:
                    outer.release.wait(10)  # held until the test lets go
                status, body = outer.answers[0] if len(outer.answers) == 1 else outer.answers.pop(0)
                self.send_response(status)
                self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/metrics"
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self.thread.start()

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(10)


@pytest.fixture
def engine() -> Iterator[Engine]:
    e = Engine()
    yield e
    e.close()


def fixture(number: int) -> bytes:
    return (FIXTURES / f"vllm_v1_scrape_{number}.prom").read_bytes()


def test_scrapes_feed_the_derivation_including_a_counter_reset(engine: Engine) -> None:
    engine.answers = [(200, fixture(1)), (200, fixture(2)), (200, fixture(3))]
    clock = FakeClock(1000.0)
    statuses: list[Record] = []
    source = ScrapeSource("vllm", engine.url, clock=clock)
    deriver = EngineMetricsDeriver("vllm")

    async def scrape_three() -> list[LineRecord]:
        records = []
        for _ in range(3):
            records.append(await source.poll())
            statuses.extend(source.notices())
            clock.advance(10.0)
        await source.aclose()
        return records

    records = asyncio.run(scrape_three())
    assert [r.text.encode() for r in records] == [fixture(1), fixture(2), fixture(3)]
    assert [(r.source, r.path, r.line_no, r.read_at) for r in records] == [
        ("scrape:vllm", engine.url, 1, 1000.0),
        ("scrape:vllm", engine.url, 2, 1010.0),
        ("scrape:vllm", engine.url, 3, 1020.0),
    ]
    # told once, on the first result, as a record on the scrape's own queue
    assert statuses == [ScrapeStatus("scrape:vllm", "vllm", True, 1000.0)]
    assert engine.requests[0]["Accept"].startswith("text/plain")

    results = [deriver.feed(parse_exposition(r.text), r.read_at) for r in records]
    rates = [{e.name: e.value for e in r.effects if isinstance(e, GaugeSet) and e.labels == E0}
             for r in results]  # fmt: skip
    assert n.DECODE not in rates[0]  # first scrape: no rate
    assert rates[1][n.DECODE] == pytest.approx(100.0)
    assert rates[1][n.MAL] == pytest.approx(1 + 640 / 360)
    assert results[2].restarted and n.DECODE not in rates[2]  # reset: no negative rate


def test_failures_are_raised_and_flip_up_down(engine: Engine) -> None:
    engine.answers = [(200, fixture(1)), (500, b"engine dead\n"), (200, fixture(2))]
    statuses: list[ScrapeStatus] = []
    source = ScrapeSource("vllm", engine.url, clock=FakeClock(5.0))

    def take() -> None:
        for notice in source.notices():
            assert isinstance(notice, ScrapeStatus)
            statuses.append(notice)

    async def go() -> None:
        await source.poll()
        take()
        with pytest.raises(ScrapeError, match="HTTP 500"):
            await source.poll()
        take()
        assert source.up is False
        await source.poll()
        take()
        take()  # taken once
        await source.aclose()

    asyncio.run(go())
    assert [s.up for s in statuses] == [True, False, True]
    assert "HTTP 500" in statuses[1].error


def test_connection_refused_is_an_error_not_no_data() -> None:
    source = ScrapeSource("vllm", f"http://127.0.0.1:{free_port()}/metrics", timeout=5.0)

    async def go() -> None:
        with pytest.raises(httpx.ConnectError):
            await source.poll()
        await source.aclose()

    asyncio.run(go())
    assert source.up is False and "ConnectError" in source.last_error


def test_a_stalled_engine_times_out(engine: Engine) -> None:
    engine.answers = [(200, fixture(1))]
    engine.stall = True
    source = ScrapeSource("vllm", engine.url, timeout=0.3)

    async def go() -> None:
        with pytest.raises(httpx.TimeoutException):
            await source.poll()
        await source.aclose()

    asyncio.run(go())
    engine.release.set()
    assert source.up is False


def test_the_whole_scrape_has_one_deadline(engine: Engine) -> None:
    engine.answers = [(200, fixture(1))]
    engine.stall = True
    source = ScrapeSource("vllm", engine.url, timeout=30.0, deadline=0.3)

    async def go() -> None:
        with pytest.raises(ScrapeTimeout, match=r"deadline of 0\.3 s"):
            await source.poll()
        await source.aclose()

    asyncio.run(go())
    engine.release.set()
    assert source.up is False and "ScrapeTimeout" in source.last_error


def test_environment_proxies_are_ignored(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    for name in ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.setenv(name, dead)
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    engine.answers = [(200, fixture(1))]
    source = ScrapeSource("vllm", engine.url)

    async def go() -> LineRecord:
        record = await source.poll()
        await source.aclose()
        return record

    assert asyncio.run(go()).text.encode() == fixture(1)


def test_empty_body_is_up(engine: Engine) -> None:
    engine.answers = [(200, b"")]
    source = ScrapeSource("vllm", engine.url)

    async def go() -> LineRecord:
        record = await source.poll()
        await source.aclose()
        return record

    assert asyncio.run(go()).text == "" and source.up is True


def test_oversized_body_is_refused(engine: Engine) -> None:
    engine.answers = [(200, fixture(1))]
    source = ScrapeSource("vllm", engine.url, max_bytes=100)

    async def go() -> None:
        with pytest.raises(ScrapeError, match="limit 100"):
            await source.poll()
        await source.aclose()

    asyncio.run(go())
