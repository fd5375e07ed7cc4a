"""The engine canary (``engines[].canary``, off by default: it costs GPU time): a known-answer
request ("capital of France" -> "Paris") every ``every``, sent only while the engine runs no
request (``inferwatch_engine_requests_running`` 0), judged on its answer.

A polled source named ``canary:ENGINE`` that checks once a minute whether a canary is due and
the engine idle; its last verdict is written again at each check, so the series stay fresh
between canaries. A request that cannot be made (the engine is down: ``EngineDown`` tells that)
gives no verdict.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import httpx

from inferwatch.clock import Clock
from inferwatch.config.models import CanaryConfig, EngineConfig
from inferwatch.derive.canary import decode_rate, judge
from inferwatch.derive.effects import Effect, GaugeSet
from inferwatch.event import Kind
from inferwatch.labels import label_value, make_labels
from inferwatch.parsers.openai_stream import parse_chat_stream
from inferwatch.parsers.service_state import listed_models
from inferwatch.pipeline.sink import EventSink, apply_effects
from inferwatch.sources.canary import stream_chat
from inferwatch.sources.service_probe import http_get
from inferwatch.store.tsdb import SeriesStore

TTFT = "inferwatch_canary_ttft_seconds"
DECODE = "inferwatch_canary_decode_tokens_per_second"
SUCCESS = "inferwatch_canary_success"
RUNNING = "inferwatch_engine_requests_running"
HELP = {
    TTFT: "Time to the first token of the engine's last canary answer.",
    DECODE: "Decode speed of the engine's last canary answer (tokens after the first).",
    SUCCESS: "1 if the engine's last canary answer was right, 0 if wrong or repetitive.",
}
CHECK_EVERY_S = 60.0
DEFAULT_ORIGIN = "http://127.0.0.1:8000"


def chat_url(engine: EngineConfig, canary: CanaryConfig) -> tuple[str, str]:
    """The chat-completions URL and the API origin (``url``, else metrics_url's origin)."""
    base = str(canary.url) if canary.url is not None else None
    if base is None:
        parts = urlsplit(str(engine.metrics_url)) if engine.metrics_url else None
        base = f"{parts.scheme}://{parts.netloc}" if parts else DEFAULT_ORIGIN
    base = base.rstrip("/")
    if base.endswith("/chat/completions"):
        origin = base.removesuffix("/chat/completions").removesuffix("/v1")
        return base, origin
    return f"{base}/v1/chat/completions", base


class CanaryWatch:
    def __init__(
        self,
        engine: EngineConfig,
        canary: CanaryConfig,
        store: SeriesStore,
        sink: EventSink,
        clock: Clock,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.engine = engine.name
        self.canary = canary
        self.name = f"canary:{engine.name}"
        self.interval = min(CHECK_EVERY_S, canary.every)
        self.url, self.origin = chat_url(engine, canary)
        self.store = store
        self.sink = sink
        self.clock = clock
        self.labels = make_labels({"engine": engine.name})
        self.last_run: float | None = None
        self.last_error = ""
        self.last_reason = ""
        self.skipped_busy = 0
        self._verdict: list[tuple[str, float]] = []
        self._client = httpx.AsyncClient(
            trust_env=False, timeout=httpx.Timeout(canary.timeout), transport=transport
        )
        for name, text in HELP.items():
            store.describe(name, Kind.GAUGE, text)

    def busy(self) -> bool:
        """Whether the engine reports a request running now (no report: not busy)."""
        now = self.clock.time()
        for s in self.store.family(RUNNING):
            if label_value(s.labels, "engine") == self.engine:
                value = self.store.current(s, now)
                if value is not None and value > 0:
                    return True
        return False

    async def poll(self) -> None:
        now = self.clock.time()
        due = self.last_run is None or now - self.last_run >= self.canary.every
        if due and self.busy():
            self.skipped_busy += 1
        elif due:
            self.last_run = now
            await self._run()
        effects: list[Effect] = [GaugeSet(n, self.labels, v, now) for n, v in self._verdict]
        await apply_effects(effects, self.store, self.sink)

    async def _model(self) -> str | None:
        if self.canary.model:
            return self.canary.model
        answer = await http_get(self._client, f"{self.origin}/v1/models")
        models = listed_models(answer.body) if answer.status == httpx.codes.OK else None
        if not models:
            self.last_error = f"{self.origin}/v1/models lists no model ({answer.error})"
            return None
        return models[0]

    async def _run(self) -> None:
        model = await self._model()
        if model is None:
            return
        body: dict[str, object] = {
            "model": model,
            "messages": [{"role": "user", "content": self.canary.prompt}],
            "max_tokens": self.canary.max_tokens,
            "temperature": 0,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        reading = await stream_chat(self._client, self.url, body)
        if reading.error:
            self.last_error = reading.error  # no verdict: the engine could not be asked
            return
        self.last_error = ""
        answer = parse_chat_stream(reading.lines)
        self.last_reason = judge(answer.text, self.canary.expect)
        verdict = [(SUCCESS, 0.0 if self.last_reason else 1.0)]
        if answer.first_token_s is not None:
            verdict.append((TTFT, answer.first_token_s))
        rate = decode_rate(answer.tokens, answer.first_token_s, answer.last_token_s)
        if rate is not None:
            verdict.append((DECODE, rate))
        self._verdict = verdict

    def status(self) -> dict[str, Any]:
        return {
            "engine": self.engine,
            "last_run": self.last_run,
            "verdict": dict(self._verdict),
            "reason": self.last_reason,
            "error": self.last_error,
            "skipped_busy": self.skipped_busy,
        }

    async def aclose(self) -> None:
        await self._client.aclose()
