"""Engine log lines and /metrics scrapes from the live sources → engine derivations → store.

One :class:`EngineIngest` per configured engine owns the log pipeline, the /metrics deriver and
the arbiter that keeps the two from writing the same series. It also exports the engine's
thresholds from config as series (``decode_anchor``, ``anchor_min_mal``), so rules compare
against them and a user changes one config value.
"""

from __future__ import annotations

import time
from dataclasses import replace
from datetime import UTC, datetime, tzinfo

from inferwatch.clock import Clock
from inferwatch.config.models import EngineConfig
from inferwatch.derive.effects import CounterInc, Effect, GaugeSet, apply
from inferwatch.derive.engine.arbiter import EngineRateArbiter
from inferwatch.derive.engine.metrics import EngineMetricsDeriver
from inferwatch.derive.engine.names import (
    CRASHED,
    SCRAPE_ERRORS,
    describe_engine_metrics,
)
from inferwatch.derive.engine.pipeline import EngineLogPipeline
from inferwatch.derive.engine.thresholds import EngineThresholds
from inferwatch.event import Event
from inferwatch.labels import make_labels
from inferwatch.model import DockerRecord, JournalRecord, LineRecord, ScrapeStatus
from inferwatch.parsers.engine import parse_engine_line
from inferwatch.parsers.engine_prefix import LinePrefix
from inferwatch.parsers.engine_time import engine_time
from inferwatch.parsers.promtext import ExpositionError, parse_exposition
from inferwatch.pipeline.repeats import Repeats
from inferwatch.pipeline.sink import EventSink, apply_effects
from inferwatch.store.tsdb import SeriesStore


def local_tz() -> tzinfo:
    """The host's zone: vLLM stamps its lines in local time without saying which."""
    zone = datetime.now().astimezone().tzinfo
    return zone if zone is not None else UTC


class EngineIngest:
    def __init__(
        self,
        cfg: EngineConfig,
        store: SeriesStore,
        sink: EventSink,
        clock: Clock,
        tz: tzinfo,
        *,
        first_start: bool = False,
    ) -> None:
        self.cfg = cfg
        self.first_start = first_start
        self.store = store
        self.sink = sink
        self.clock = clock
        self.tz = tz
        self.labels = make_labels({"engine": cfg.name})
        self.thresholds = EngineThresholds.of(cfg)
        self.pipeline = EngineLogPipeline(cfg.name)
        self.metrics = EngineMetricsDeriver(cfg.name)
        self.arbiter = EngineRateArbiter(hold=max(60.0, 3 * cfg.scrape_interval))
        self._last_at: float | None = None
        self._year_hour, self._year = -1, 0
        self.bad_bodies = Repeats(clock.monotonic)
        describe_engine_metrics(store)

    def _time(self, prefix: LinePrefix, fallback: float) -> float:
        now = self.clock.time()
        hour = int(now // 3600)  # a year ends on an hour (UTC): look it up once an hour
        if hour != self._year_hour:
            self._year_hour, self._year = hour, time.gmtime(now).tm_year
        year = self._year
        at = engine_time(prefix, year=year, tz=self.tz, now=now)
        if at is None:
            at = self._last_at if self._last_at is not None else fallback
        self._last_at = at
        return at

    async def on_log_line(self, rec: LineRecord) -> None:
        record = parse_engine_line(rec.text)
        fallback = rec.wall_time if isinstance(rec, JournalRecord | DockerRecord) else rec.read_at
        if isinstance(rec, DockerRecord) and record is not None:
            at = self._last_at = rec.wall_time  # docker's UTC stamp beats the container's clock
        elif record is not None:
            at = self._time(record.prefix, fallback)
        else:
            at = self._last_at if self._last_at is not None else fallback
        key = f"{rec.source}:{rec.path}:{rec.line_no}"
        effects = self.pipeline.feed(record, at, rec.line_no, rec.path, key)
        if effects:
            if self.first_start:
                effects = self._old_as_baseline(effects)
            await apply_effects(self.arbiter.from_log(effects), self.store, self.sink)

    def _old_as_baseline(self, effects: list[Effect]) -> list[Effect]:
        """On a start without a checkpoint the log's past is read too: what happened more than
        ``alert_max_age`` ago is counted and kept as events, never paged (a crash of last month
        must not ring now)."""
        horizon = self.clock.time() - self.cfg.alert_max_age
        out: list[Effect] = []
        for effect in effects:
            if isinstance(effect, GaugeSet) and effect.name == CRASHED and effect.at < horizon:
                continue  # an old crash is history, not a dead engine to page for now
            if isinstance(effect, CounterInc) and effect.at < horizon:
                out.append(effect._replace(alertable=False))
            elif isinstance(effect, Event) and effect.at < horizon:
                out.append(replace(effect, details={**effect.details, "alertable": False}))
            else:
                out.append(effect)
        return out

    async def on_scrape(self, rec: LineRecord) -> None:
        try:
            samples = parse_exposition(rec.text)
        except ExpositionError as exc:  # a failed scrape, as Prometheus takes it: up 0
            self.store.inc(SCRAPE_ERRORS, self.labels)
            apply(self.metrics.down(rec.read_at), self.store)
            self.arbiter.metrics_down(self.cfg.name)
            self.bad_bodies.note(
                f"{rec.source}: {exc.reason[:80]}",
                "engine /metrics is not exposition text; counted as a failed scrape",
                source=rec.source,
                error=str(exc)[:500],
            )
            return
        result = self.metrics.feed(samples, rec.read_at)
        await apply_effects(self.arbiter.from_metrics(result), self.store, self.sink)

    async def on_scrape_status(self, status: ScrapeStatus) -> None:
        if not status.up:
            self.arbiter.metrics_down(self.cfg.name)
            apply(self.metrics.down(status.at), self.store)
        else:  # answering (again): evidence that a crashed engine is back
            await apply_effects(self.pipeline.metrics_back(status.at), self.store, self.sink)

    async def tick(self) -> None:
        now = self.clock.time()
        for name, value in self.thresholds.samples():
            self.store.set(name, self.labels, value, now)
        effects = self.pipeline.flush(now)  # crash chains close here, on a quiet log
        if effects and self.first_start:
            effects = self._old_as_baseline(effects)
        await apply_effects(self.arbiter.from_log(effects), self.store, self.sink)
