"""Engine log records in, speed series and start-up facts out: pure and clock-free.

One ``EngineLogDeriver`` per engine log (label ``engine``; vLLM's ``Engine NNN`` and SGLang's DP
rank become ``dp_rank``). The caller parses each line (``parsers.engine.parse_engine_line``),
computes the line's wall time ``at`` and passes both; nothing here reads a clock.

- A stats line is one window (reference/engine.md 2.2), timestamped at its end, the line's time:
  decode and prefill tokens/s, running, waiting, KV usage (0-1), prefix-cache hit ratio, and the
  time of the last stats line (vLLM goes silent while idle, so silence after 0.0/0.0 is normal).
- The SpecDecoding line printed right after it (within ``attach_within`` seconds) belongs to the
  same window: MAL, per-position and draft acceptance ratios (``engine_spec``), and the step rate
  decode / MAL, all at the window's time. A window without one is *unknown*: no MAL and no step
  rate, never 1 or 0. With speculative decoding off (configured, or inferred after
  ``spec_off_after`` busy windows of one engine start without any SpecDecoding line) MAL is
  absent and the step rate is the decode rate (engine.md 3.4).
- A restart (start-up lines after the engine ran, V0 counters dropping) or a fatal crash line
  ends every window series with a staleness marker, so a dead engine's last "Running: 1" does
  not linger as a stall suspect, and windows are never merged across processes.

Stats windows are samples, not events: only start-up facts become events (``startup``), minus
the per-route chatter. ``engine_line_event`` gives replay one event dict per recognised line.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from inferwatch.derive.effects import CounterInc, Effect, GaugeSet, SeriesEnd
from inferwatch.derive.engine import names as n
from inferwatch.derive.engine.line_events import line_event_fields
from inferwatch.derive.engine.periods import StatsWindow
from inferwatch.derive.engine.spec import SpecWindow, V0Counters, v1_window
from inferwatch.derive.engine.startup import EnginePhase
from inferwatch.event import Kind
from inferwatch.labels import Labels, make_labels
from inferwatch.parsers.engine_records import (
    EngineCrash,
    EngineRecord,
    EngineStats,
    OtherLine,
    SpecDecode,
    StartupFact,
    is_fault,
)

__all__ = ["EngineLogDeriver", "engine_line_event"]

_SPEC_SERIES = frozenset({n.MAL, n.STEPS, n.DRAFT_ACCEPT, n.POSITION})
_NONE: frozenset[str] = frozenset()


@dataclass(slots=True)
class _Window:
    at: float
    dp: str | None
    decode: float | None
    running: int | None
    prefill: float | None = None


MAX_WINDOW_S = 60.0
# Label sets and written series remembered per engine. A log can name any number of DP ranks
# (``Engine 4711:``) and positions: past this, effects still go out, for the store's limits to
# judge and count, but nothing more is kept here, so memory stays bounded whatever the log says.
MAX_TRACKED = 4096


class EngineLogDeriver:
    """Feed one engine's records in log order; each call returns the effects it causes."""

    __slots__ = ("_attach", "_busy_unknown", "_configured", "_dropped", "_drops", "_k", "_labels",
                 "_last_stats", "_mode", "_off_after", "_on_window", "_pending", "_silent", "_v0",
                 "_written", "engine", "phase")  # fmt: skip

    def __init__(
        self,
        engine: str,
        *,
        speculative: bool | None = None,
        num_speculative_tokens: int | None = None,
        spec_off_after: int = 6,
        attach_within: float = 2.0,
        on_window: Callable[[StatsWindow], None] | None = None,
        keeping: Keeping | None = None,
    ) -> None:
        """``keeping``: the store, where it keeps readings of some gauges only (a replay's):
        a reading it would drop, of a series it holds already, is not made at all."""
        self.engine = engine
        self._drops = keeping.drops if keeping is not None else _keeps_all
        self._silent: set[tuple[str, str | None, str | None]] = set()  # series found dropped
        self._dropped = frozenset(
            spec.name
            for spec in n.ENGINE_METRICS
            if keeping is not None and spec.kind is Kind.GAUGE and not keeping.keeps(spec.name)
        )
        self._configured = {True: "on", False: "off", None: "unknown"}[speculative]
        self._mode = self._configured
        self._k = num_speculative_tokens
        self._off_after = spec_off_after
        self._attach = attach_within
        self._on_window = on_window
        self._labels: dict[tuple[str | None, str | None], Labels] = {}
        self._pending: _Window | None = None
        self._busy_unknown = 0
        self.phase = EnginePhase(engine, self._lab)
        self._v0: dict[str | None, V0Counters] = {}
        # series written since the process started: (name, dp_rank, position) -> labels
        self._written: dict[tuple[str, str | None, str | None], Labels] = {}
        self._last_stats: dict[str | None, float] = {}  # dp_rank -> time of its last stats line

    @property
    def spec_mode(self) -> str:
        """Speculative decoding of the current engine process: on, off or unknown (not inferred)."""
        return self._mode

    def feed(
        self, record: EngineRecord, at: float, line: int, source: str, key: str
    ) -> list[Effect]:
        if isinstance(record, EngineStats):
            return self._stats(record, at)
        if isinstance(record, SpecDecode):
            return self._spec(record, at)
        if isinstance(record, StartupFact):
            return self._startup(record, at, line, source, key)
        if isinstance(record, EngineCrash) and is_fault(record):
            self.phase.dead()
            return self.end_series(at)
        if isinstance(record, OtherLine) and record.kind == "shm_broadcast_wait":
            # a worker waited a minute for the others: a hang under way (rule EngineStalled)
            return [CounterInc(n.STALL_WARNINGS, self._lab(None), 1.0, at)]
        return []

    def flush(self, now: float = math.inf) -> None:
        """Hand over a window whose SpecDecoding line can no longer come (``now`` past it; no
        ``now``: end of input). It only settles the window: effects only ever come from
        ``feed``."""
        w = self._pending
        if w is not None and now - w.at > self._attach:
            self._settle()

    def end_series(self, at: float) -> list[Effect]:
        """The engine process ended (crash, restart): staleness markers for its window series."""
        self._settle()
        for counters in self._v0.values():
            counters.reset()
        out: list[Effect] = [SeriesEnd(k[0], lab, at) for k, lab in self._written.items()]
        self._written.clear()
        return out

    # -- internals --------------------------------------------------------------------------
    def _lab(self, dp: str | None, position: str | None = None) -> Labels:
        labels = self._labels.get((dp, position))
        if labels is None:
            pairs = {"engine": self.engine, "dp_rank": dp or "", "position": position or ""}
            labels = make_labels(pairs)
            if len(self._labels) < MAX_TRACKED:
                self._labels[(dp, position)] = labels
        return labels

    def _set(
        self, out: list[Effect], name: str, dp: str | None, value: float, at: float, *,
        position: str | None = None,
    ) -> None:  # fmt: skip
        key = (name, dp, position)
        labels = self._written.get(key)  # a series written before: one lookup
        if labels is None:
            labels = self._lab(dp, position)
            if len(self._written) < MAX_TRACKED:
                self._written[key] = labels
        elif name in self._dropped:
            if key in self._silent:
                return  # the store holds the series and keeps no readings of it (for good)
            if self._drops(name, labels):
                self._silent.add(key)
                return
        out.append(GaugeSet(name, labels, value, at))

    def _count_generated(self, out: list[Effect], dp: str | None, decode: float, at: float) -> None:
        """Tokens of the window (rate x the time since this rank's last line; a gap longer than
        ``MAX_WINDOW_S`` is idle time, not a window): a counter that stays flat when a stuck
        engine stops printing while requests are still running (rule EngineStalled)."""
        prev = self._last_stats.get(dp)
        if prev is not None or len(self._last_stats) < MAX_TRACKED:
            self._last_stats[dp] = at
        span = at - prev if prev is not None else 0.0
        tokens = decode * span if 0 < span <= MAX_WINDOW_S else 0.0
        out.append(CounterInc(n.GENERATED, self._lab(dp), tokens, at, wake=False))

    def _settle(self, spec: SpecWindow | None = None, steps: float | None = None) -> None:
        w, self._pending = self._pending, None
        if w is None:
            return
        if spec is None and self._mode == "unknown" and w.decode:
            self._busy_unknown += 1
            if self._busy_unknown >= self._off_after:
                self._mode = "off"
        if self._on_window is not None:
            mal = spec.mal if spec else None
            accepted, drafts = (spec.accepted, spec.drafts) if spec else (None, None)
            self._on_window(StatsWindow(self.engine, w.dp, w.at, w.decode, w.running, mal,
                                        steps, accepted, drafts, w.prefill))  # fmt: skip

    def _stats(self, r: EngineStats, at: float) -> list[Effect]:
        out: list[Effect] = []
        if r.format == "vllm_v0_prefix_cache":
            w = self._pending
            if r.prefix_cache_hit_pct is not None:
                near = w is not None and abs(at - w.at) <= self._attach
                t, dp = (w.at, w.dp) if w is not None and near else (at, None)
                self._set(out, n.PREFIX_HIT, dp, r.prefix_cache_hit_pct / 100.0, t)
            return out
        sglang = r.format.startswith("sglang")
        if sglang and r.prefix.tp_rank not in (None, 0):
            return out  # every TP rank may print the same batch
        self._settle()
        self.phase.running()
        dp_int = r.prefix.dp_rank if sglang else r.dp_rank
        dp = None if dp_int is None else str(dp_int)
        decode = r.gen_tps if r.format != "sglang_prefill" else None
        if decode is not None:
            self._set(out, n.DECODE, dp, decode, at)
            self._count_generated(out, dp, decode, at)
        if r.prompt_tps is not None:
            self._set(out, n.PREFILL, dp, r.prompt_tps, at)
        if r.running is not None:
            self._set(out, n.RUNNING, dp, float(r.running), at)
        if r.waiting is not None:
            self._set(out, n.WAITING, dp, float(r.waiting), at)
        kv = r.token_usage if r.token_usage is not None else _ratio(r.kv_usage_pct)
        if kv is not None:
            self._set(out, n.KV_USAGE, dp, kv, at)
        if r.prefix_cache_hit_pct is not None:
            self._set(out, n.PREFIX_HIT, dp, r.prefix_cache_hit_pct / 100.0, at)
        out.append(GaugeSet(n.LAST_STATS, self._lab(dp), at, at))
        if r.format == "sglang_prefill":
            return out
        self._pending = _Window(at, dp, decode, r.running, r.prompt_tps)
        if sglang:  # accept len is on the line itself; without it speculation is off
            if r.mal:
                self._set(out, n.MAL, dp, r.mal, at)
            steps = None if decode is None else decode / (r.mal or 1.0)
            if steps is not None:
                self._set(out, n.STEPS, dp, steps, at)
            self._settle(SpecWindow(r.mal, None, None, None, None), steps)
        elif self._mode == "off" and decode is not None:
            self._set(out, n.STEPS, dp, decode, at)
            self._settle(None, decode)
        return out

    def _spec(self, r: SpecDecode, at: float) -> list[Effect]:
        if r.format == "llamacpp":
            return []  # one request's summary, not a window
        w = self._pending
        if w is not None and abs(at - w.at) > self._attach:
            self._settle()
            w = None
        dp, t = (w.dp, w.at) if w is not None else (None, at)
        self._mode = "on"
        out: list[Effect] = []
        if r.cumulative:
            counters = self._v0.get(dp)
            if counters is None:
                counters = V0Counters()
                if len(self._v0) < MAX_TRACKED:
                    self._v0[dp] = counters
            delta = counters.feed(r, self._k)
            if delta.restart:
                self._settle()
                return self._end_spec(dp, t)
            spec = delta.window
            if spec is None:
                self._settle()
                return out
        else:
            spec = v1_window(r, self._k)
        if spec.draft_acceptance is not None:
            self._set(out, n.DRAFT_ACCEPT, dp, spec.draft_acceptance, t)
        if spec.mal is None:
            self._settle()
            keep = {n.DRAFT_ACCEPT} if spec.draft_acceptance is not None else set()
            return out + self._end_spec(dp, t, keep)
        self._set(out, n.MAL, dp, spec.mal, t)
        for i, ratio in enumerate(spec.per_position or ()):
            self._set(out, n.POSITION, dp, ratio, t, position=str(i))
        steps = None
        if w is not None and w.decode is not None and spec.mal > 0:
            steps = w.decode / spec.mal
            self._set(out, n.STEPS, dp, steps, t)
        self._settle(spec, steps)
        return out

    def _end_spec(
        self, dp: str | None, at: float, keep: frozenset[str] | set[str] = _NONE
    ) -> list[Effect]:
        """Nothing drafted, or a restart: MAL and step rate become absent (not 1, not 0)."""
        names = _SPEC_SERIES - keep
        ended = [k for k in self._written if k[0] in names and k[1] == dp]
        return [SeriesEnd(k[0], self._written.pop(k), at) for k in ended]

    def _startup(self, r: StartupFact, at: float, line: int, source: str, key: str) -> list[Effect]:
        outcome = self.phase.startup(r, at, line, source, key)
        if not outcome.new_start:
            return outcome.effects
        out = self.end_series(at) if outcome.restart else []
        self._mode = self._configured
        self._busy_unknown = 0
        return out + outcome.effects


class Keeping(Protocol):
    """What a store says of gauge readings (``SeriesStore.keeps`` and ``drops``)."""

    def keeps(self, name: str) -> bool: ...

    def drops(self, name: str, labels: Labels) -> bool: ...


def _keeps_all(_name: str, _labels: Labels) -> bool:
    return False


def _ratio(pct: float | None) -> float | None:
    return None if pct is None else pct / 100.0


def engine_line_event(
    record: EngineRecord, *, engine: str, source: str, line: int
) -> dict[str, Any] | None:
    """Replay's per-line event: ``type``, ``source``, ``line``, ``engine`` and the record's corpus
    field names (shared/corpus/README.md), for stats, SpecDecoding and the start-up lines that
    make no event of their own. Crash lines give None: their event is the incident
    (``crash.EngineCrashTracker``); so do start-up facts that ``startup.EnginePhase`` turns
    into a ``startup`` event, so that each start-up line is one event, never two."""
    fields = line_event_fields(record)
    if fields is None:
        return None
    return {"type": record.type, "source": source, "line": line, "engine": engine, **fields}
