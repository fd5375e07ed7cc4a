"""The life phase of one engine process, from its log: starting, running, dead.

reference/engine.md 6: start-up takes minutes (engine init, model load, graph capture) and
"starting" is not "down". The first start-up fact after the engine ran or died opens a new start:
its time becomes ``inferwatch_engine_start_time_seconds`` and the caller ends the previous
process's window series (windows are never merged across a restart). Only facts an engine process
prints while starting (``STARTS``) open a start; server chatter that can come later (routes,
uvicorn, chat-template warm-up) never does. Readiness (``Application startup complete.``, SGLang's
"fired up") or the first stats line means running; a fatal crash line means dead.

Start-up facts become ``startup`` events, except the chatty ones (``QUIET``: one per route, …).
The KV-cache size line sets ``inferwatch_engine_kv_cache_capacity_tokens``; the size is per
engine core, so an ``EngineCore_DP<n>`` tag gives it that ``dp_rank``. Printed twice in one
start (#28228), it is simply set twice. Pure and clock-free.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import NamedTuple

from inferwatch.derive.effects import Effect, GaugeSet
from inferwatch.derive.engine import names as n
from inferwatch.derive.engine.line_events import QUIET, record_fields
from inferwatch.event import Event
from inferwatch.labels import Labels
from inferwatch.parsers.engine_records import StartupFact

READY = frozenset({"app_startup_complete", "server_ready"})
STARTS = frozenset({
    "version", "engine_config", "model_loading", "kv_cache_memory", "memory_profile", "gpu_blocks",
    "kv_cache_size", "max_concurrency", "torch_compile", "graph_capture", "init_engine",
    "cache_config_info", "engine_core_ready",
})  # fmt: skip
_DP_PROC = re.compile(r"EngineCore_(?:DP)?(\d+)$")


class StartupOutcome(NamedTuple):
    """What one start-up fact did: its effects, and whether it opened a new start after the
    previous process had run (``restart``: the caller ends that process's series)."""

    effects: list[Effect]
    new_start: bool
    restart: bool


class EnginePhase:
    """Tracks one engine's phase; ``labels(dp_rank)`` gives the engine's label set."""

    __slots__ = ("_labels", "engine", "phase", "started_at")

    def __init__(self, engine: str, labels: Callable[[str | None], Labels]) -> None:
        self.engine = engine
        self._labels = labels
        self.phase: str | None = None  # None (unknown) | "starting" | "running" | "dead"
        self.started_at: float | None = None

    def running(self) -> None:
        self.phase = "running"

    def dead(self) -> None:
        self.phase = "dead"

    def startup(
        self, r: StartupFact, at: float, line: int, source: str, key: str
    ) -> StartupOutcome:
        out: list[Effect] = []
        new_start = self.phase != "starting" and r.event in STARTS
        restart = new_start and self.phase == "running"
        if new_start:
            self.phase = "starting"
            self.started_at = at
            out.append(GaugeSet(n.START_TIME, self._labels(None), at, at))
        if r.event in READY:
            self.phase = "running"
        if r.event == "kv_cache_size" and r.kv_cache_tokens is not None:
            m = _DP_PROC.search(r.prefix.proc or "")
            labels = self._labels(m.group(1) if m else None)
            out.append(GaugeSet(n.KV_CAPACITY, labels, float(r.kv_cache_tokens), at))
        if r.event not in QUIET:
            details = record_fields(r) | {"engine": self.engine}
            labels_map = {"engine": self.engine, "event": r.event}
            out.append(Event("startup", at, source, key, line, labels_map, details))
        return StartupOutcome(out, new_start, restart)
