"""The engine canary against a loopback emulator of an OpenAI-compatible streaming API: a right
answer, a wrong one, a repetitive one, a busy engine, an engine that cannot be asked."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import pytest
from aiohttp import web

from inferwatch.clock import FakeClock
from inferwatch.config.models import CanaryConfig, EngineConfig
from inferwatch.event import Event
from inferwatch.labels import make_labels
from inferwatch.pipeline.canary import CanaryWatch, chat_url
from inferwatch.store.tsdb import SeriesStore

ENGINE = make_labels({"engine": "main"})


@dataclass
class Emulator:
    chunks: list[str] = field(default_factory=lambda: ["Par", "is", "."])
    usage: int | None = 3
    delay: float = 0.02
    requests: list[dict[str, object]] = field(default_factory=list)

    async def models(self, _request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": "demo-model"}]})

    async def chat(self, request: web.Request) -> web.StreamResponse:
        self.requests.append(await request.json())
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        for text in self.chunks:
            await asyncio.sleep(self.delay)
            event = {"choices": [{"index": 0, "delta": {"content": text}}]}
            await response.write(f"data: {json.dumps(event)}\n\n".encode())
        if self.usage is not None:
            event = {"choices": [], "usage": {"completion_tokens": self.usage}}
            await response.write(f"data: {json.dumps(event)}\n\n".encode())
        await response.write(b"data: [DONE]\n\n")
        return response


Scenario = Callable[[Emulator, str], Awaitable[None]]


def serve(scenario: Scenario, emu: Emulator | None = None) -> None:
    """Run ``scenario`` with the emulator listening on a loopback port."""

    async def main() -> None:
        e = emu or Emulator()
        app = web.Application()
        app.router.add_get("/v1/models", e.models)
        app.router.add_post("/v1/chat/completions", e.chat)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = runner.addresses[0][1]
        try:
            await scenario(e, f"http://127.0.0.1:{port}/metrics")
        finally:
            await runner.cleanup()

    asyncio.run(main())


class Harness:
    def __init__(self, metrics_url: str, **canary: object) -> None:
        self.clock = FakeClock()
        self.store = SeriesStore(self.clock)
        engine = EngineConfig(name="main", metrics_url=metrics_url)  # type: ignore[arg-type]
        self.watch = CanaryWatch(
            engine, CanaryConfig.model_validate(canary), self.store, self._sink, self.clock
        )

    async def _sink(self, events: list[Event]) -> None:
        pass

    def value(self, name: str) -> float | None:
        s = self.store.get(name, ENGINE)
        return self.store.current(s) if s is not None else None


def test_url_defaults_to_the_metrics_origin() -> None:
    engine = EngineConfig(name="e", metrics_url="http://127.0.0.1:30000/metrics")  # type: ignore[arg-type]
    assert chat_url(engine, CanaryConfig()) == (
        "http://127.0.0.1:30000/v1/chat/completions",
        "http://127.0.0.1:30000",
    )
    custom = CanaryConfig(url="http://127.0.0.1:9/v1/chat/completions")  # type: ignore[arg-type]
    assert chat_url(engine, custom) == (
        "http://127.0.0.1:9/v1/chat/completions",
        "http://127.0.0.1:9",
    )


def test_right_answer_records_ttft_and_decode() -> None:
    serve(_right_answer)


async def _right_answer(emu: Emulator, metrics: str) -> None:
    h = Harness(metrics)
    await h.watch.poll()
    assert h.value("inferwatch_canary_success") == 1
    ttft = h.value("inferwatch_canary_ttft_seconds")
    assert ttft is not None and ttft >= 0.02
    decode = h.value("inferwatch_canary_decode_tokens_per_second")
    assert decode is not None and 0 < decode < 2 / 0.02 * 2  # 2 tokens after the first
    (request,) = emu.requests
    assert request["model"] == "demo-model" and request["stream"] is True
    assert request["max_tokens"] == 16
    # not due again for 30 minutes: the verdict is written again, nothing is asked
    h.clock.advance(60)
    await h.watch.poll()
    assert len(emu.requests) == 1
    assert h.value("inferwatch_canary_success") == 1
    h.clock.advance(1800)
    await h.watch.poll()
    assert len(emu.requests) == 2


@pytest.mark.parametrize(
    ("chunks", "reason"),
    [
        (["London", "."], "does not contain 'Paris'"),
        (["Paris"] + [" the"] * 8, "repeats 'the'"),
        (["Par", "is", "ççççççç"], "repeats 'ç'"),
    ],
)
def test_wrong_or_repetitive_answer_fails(chunks: list[str], reason: str) -> None:
    async def scenario(_emu: Emulator, metrics: str) -> None:
        h = Harness(metrics)
        await h.watch.poll()
        assert h.value("inferwatch_canary_success") == 0
        assert reason in h.watch.status()["reason"]

    serve(scenario, Emulator(chunks=chunks, usage=None))


def test_busy_engine_is_not_asked() -> None:
    serve(_busy)


async def _busy(emu: Emulator, metrics: str) -> None:
    h = Harness(metrics)
    running = make_labels({"engine": "main", "dp_rank": "0"})
    h.store.set("inferwatch_engine_requests_running", running, 1.0)
    await h.watch.poll()
    assert emu.requests == [] and h.watch.status()["skipped_busy"] == 1
    assert h.value("inferwatch_canary_success") is None
    h.clock.advance(60)
    h.store.set("inferwatch_engine_requests_running", running, 0.0)
    await h.watch.poll()
    assert len(emu.requests) == 1 and h.value("inferwatch_canary_success") == 1


def test_engine_that_cannot_be_asked_gives_no_verdict() -> None:
    h = Harness("http://127.0.0.1:9/metrics", model="m")
    asyncio.run(h.watch.poll())
    assert h.value("inferwatch_canary_success") is None
    assert "ConnectError" in h.watch.status()["error"]
