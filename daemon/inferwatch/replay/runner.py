"""The replay loop: merged records on a virtual clock, through the daemon's own pipelines.

Virtual time comes from the records. Before each record the virtual scheduler runs what was due
(store ticks carrying event counters forward, rule evaluations every ``eval_step``, or at a
group's own longer ``interval``); after it, the record's effects are applied and its events
printed. Replay never reads the host.
"""

from __future__ import annotations

import fnmatch
import itertools
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from inferwatch.alerts.model import AlertState, AlertTransition
from inferwatch.clock import FakeClock
from inferwatch.derive.effects import Effect, apply
from inferwatch.derive.engine.busy import BusyPeriods
from inferwatch.derive.engine.log import engine_line_event
from inferwatch.derive.engine.names import describe_engine_metrics
from inferwatch.derive.engine.pipeline import EngineLogPipeline
from inferwatch.derive.engine.thresholds import EngineThresholds
from inferwatch.event import Event
from inferwatch.labels import Labels, make_labels
from inferwatch.parsers.engine_records import EngineRecord as EngineRecordTypes
from inferwatch.replay.output import Writer, busy_text, iso
from inferwatch.replay.timeline import (
    BOOT_RELATIVE,
    UNTIMED,
    WALL,
    TimeContext,
    TimedRecord,
    engine_records,
    merged,
)
from inferwatch.rules.evaluator import RuleManager
from inferwatch.rules.reads import metric_reads
from inferwatch.rules.ruleset import RuleGroup, RuleSet
from inferwatch.runtime.scheduler import VirtualScheduler
from inferwatch.store.limits import SeriesLimits
from inferwatch.store.tsdb import SeriesStore

if TYPE_CHECKING:
    from inferwatch.derive.kernel.pipeline import KernelPipeline

DEFAULT_THRESHOLDS = EngineThresholds()
MAX_GAP_S = 25 * 3600.0  # longer than any rule range shipped (24 h baselines)
# Retention is applied every 10 minutes of the log: a replay keeps a day of history for the
# baselines anyway, and trimming every minute was ~5 % of a replay's own time.
TRIM_EVERY_S = 600.0


@dataclass(slots=True)
class ReplayInputs:
    kernel: list[str] = field(default_factory=list)
    engine_logs: list[str] = field(default_factory=list)


class TimeBaseError(ValueError):
    """Files on a wall clock and files with seconds since boot only cannot be merged."""


@dataclass(slots=True)
class ReplayResult:
    events: Counter[str] = field(default_factory=Counter)
    alerts: Counter[str] = field(default_factory=Counter)
    records: int = 0
    first: float | None = None
    last: float | None = None
    time_base: str = WALL


class Replay:
    def __init__(
        self,
        inputs: ReplayInputs,
        writer: Writer,
        ctx: TimeContext,
        *,
        eval_step: float = 10.0,
        correlation_window: float | None = None,
        engine_names: dict[str, str] | None = None,
        rule_set: RuleSet | None = None,
        external_labels: dict[str, str] | None = None,
        engine_thresholds: dict[str, EngineThresholds] | None = None,
        limits: SeriesLimits | None = None,
        alert_limit: int = 0,
        keep_unread: bool = True,
    ) -> None:
        self.inputs = inputs
        self.writer = writer
        self.ctx = ctx
        self.eval_step = eval_step
        self.clock = FakeClock(0.0)
        # Unless the store is read after the run (a report draws it: ``keep_unread``), only the
        # rules read it, and gauges they cannot read keep no samples.
        reads = None if keep_unread else metric_reads(rule_set or RuleSet())
        self.store = SeriesStore(self.clock, limits=limits, trim_every_s=TRIM_EVERY_S, reads=reads)
        self.scheduler = VirtualScheduler(self.clock)
        self.kernel: KernelPipeline | None = None
        self._kernel_feed: Callable[[KernelPipeline, TimedRecord], list[Effect]] | None = None
        if inputs.kernel:  # the kernel pipeline is loaded only for kernel logs
            from inferwatch.replay.kernel_feed import feed, kernel_pipeline  # noqa: PLC0415

            self.kernel, self._kernel_feed = kernel_pipeline(self.store, correlation_window), feed
        self.busy = BusyPeriods()
        self.engines: dict[str, EngineLogPipeline] = {}
        self._engine_labels: dict[str, Labels] = {}
        self.engine_names = dict(engine_names or {})
        self.result = ReplayResult()
        self.thresholds = dict(engine_thresholds or {})
        describe_engine_metrics(self.store)
        self.rules: RuleManager | None = None
        self._ticked: dict[RuleGroup, float] = {}  # last tick that ran a group with an interval
        if rule_set is not None and rule_set.groups:
            self.rules = RuleManager(
                rule_set, self.store, external_labels or {}, alert_limit=alert_limit
            )
            for name, need in rule_set.lookback_by_metric().items():
                self.store.require_retention(need + 600.0, name or None)
            self.store.on_change(self._on_change)

    def streams(self) -> list[Any]:
        out: list[Any] = []
        if self.inputs.kernel:  # the kernel parsers load only for kernel logs
            from inferwatch.replay.kernel_records import kernel_records  # noqa: PLC0415

            for index, name in enumerate(self.inputs.kernel):
                out.append(kernel_records(Path(name), index, self.ctx, name))
        offset = len(self.inputs.kernel)
        render = self.writer.fmt == "jsonl"  # line events rendered where records are parsed
        for index, name in enumerate(self.inputs.engine_logs):
            out.append(engine_records(Path(name), offset + index, self.ctx, name, render=render))
        return out

    def _engine(self, source: str) -> EngineLogPipeline:
        pipeline = self.engines.get(source)
        if pipeline is None:
            engine = engine_for(source, self.engine_names) or Path(source).stem
            pipeline = EngineLogPipeline(engine, busy=self.busy, keeping=self.store)
            self.engines[source] = pipeline
        return pipeline

    def _timed_streams(self) -> list[Iterator[TimedRecord]]:
        """The input streams, after deciding the replay's time base from each one's first
        record: wall when every file has wall times, relative when none has; a mix cannot be
        merged without ``--boot-time`` (:class:`TimeBaseError`)."""
        out: list[Iterator[TimedRecord]] = []
        bases: dict[str, str] = {}
        for stream in self.streams():
            first = next(stream, None)
            if first is None:
                continue
            bases[first.source] = first.base
            out.append(itertools.chain((first,), stream))
        kinds = set(bases.values())
        if WALL in kinds and len(kinds) > 1:
            relative = ", ".join(s for s, b in bases.items() if b != WALL)
            raise TimeBaseError(
                f"{relative}: kernel seconds only (time since boot), cannot be merged with "
                "files on a wall clock; give --boot-time (ISO 8601 or Unix seconds)"
            )
        if kinds and WALL not in kinds:
            self.result.time_base = BOOT_RELATIVE if BOOT_RELATIVE in kinds else UNTIMED
            self.writer.relative = True
        return out

    async def run(self) -> ReplayResult:
        res = self.result
        started = False
        for record in merged(self._timed_streams()):
            if not started:
                self.clock.set(record.at)
                self.scheduler.every("tick", self.eval_step, self._tick)
                started = True
                res.first = record.at
            await self._advance(record.at)
            res.records += 1
            res.last = record.at
            self._effects(self._process(record))
        if self.kernel is not None:
            self._effects(self.kernel.flush())
        for pipeline in self.engines.values():
            self._effects(pipeline.flush())
        if started:
            await self._tick()
        self.writer.flush()
        return res

    async def _advance(self, t: float) -> None:
        """Run what is due up to ``t``; a gap longer than ``MAX_GAP_S`` is evaluated for its
        first ``MAX_GAP_S`` (alerts resolve, pending timers run out) and then jumped over."""
        now = self.clock.time()
        if t <= now:
            return
        if t - now > MAX_GAP_S:
            await self.scheduler.run_until(now + MAX_GAP_S)
            self.scheduler.skip_to(t - self.eval_step)
        await self.scheduler.run_until(t)

    def _process(self, record: TimedRecord) -> list[Effect]:
        if record.kind == "kernel":
            assert self.kernel is not None and self._kernel_feed is not None
            return self._kernel_feed(self.kernel, record)
        record_ = record.parsed
        assert isinstance(record_, EngineRecordTypes)
        pipeline = self._engine(record.source)
        if record.rendered is not None:
            self.result.events[record_.type] += 1
            self.writer.event_fields_json(
                record.at, record_.type, record.source, record.line, pipeline.engine,
                record.rendered,
            )  # fmt: skip
        else:
            line_event = engine_line_event(
                record_, engine=pipeline.engine, source=record.source, line=record.line
            )
            if line_event is not None:
                self.result.events[line_event["type"]] += 1
                self.writer.event_doc(record.at, line_event)
        key = f"{record.source}:{record.line}"
        return pipeline.feed(record_, record.at, record.line, record.source, key)

    def _effects(self, effects: list[Effect]) -> None:
        if not effects:
            return
        events: list[Event] = apply(effects, self.store)
        for event in events:
            self.result.events[event.type] += 1
            self.writer.event(event)

    async def _tick(self) -> None:
        now = self.clock.time()
        self.store.tick()
        if self.kernel is not None:
            self._effects(self.kernel.advance(now))
        for pipeline in self.engines.values():
            self._effects(pipeline.flush(now))
            thresholds = self.thresholds.get(pipeline.engine, DEFAULT_THRESHOLDS)
            labels = self._engine_labels.get(pipeline.engine)
            if labels is None:
                labels = self._engine_labels[pipeline.engine] = make_labels(
                    {"engine": pipeline.engine}
                )
            for name, value in thresholds.samples():
                self.store.set(name, labels, value, now)
        if self.rules is not None:
            self._alerts(self.rules.evaluate_groups(self._due(now), now))

    def _due(self, now: float) -> list[RuleGroup]:
        """The groups a tick at ``now`` evaluates, in file order: every group, except that one
        whose own ``interval`` is longer than the step runs at that interval (as in the daemon
        and Prometheus; a 30 s group counts 30 s samples, never 10 s ones)."""
        assert self.rules is not None
        out: list[RuleGroup] = []
        for group in self.rules.rule_set.groups:
            interval = group.interval_s
            if interval is not None and interval > self.eval_step:
                last = self._ticked.get(group)
                if last is not None and last <= now < last + interval - 1e-9:
                    continue
                self._ticked[group] = now
            out.append(group)
        return out

    def _on_change(self, name: str, _labels: Labels, _t: float) -> None:
        """An event counter moved: evaluate the groups reading it now, as the daemon does."""
        if self.rules is None:
            return
        reading = self.rules.rules_reading(name)
        if not reading:
            return
        now = self.clock.time()
        for group in self.rules.rule_set.groups:
            if group in reading:
                self._alerts(self.rules.evaluate_group(group, now))

    def _alerts(self, transitions: list[AlertTransition]) -> None:
        for tr in transitions:
            if tr.to_state not in (AlertState.FIRING, AlertState.RESOLVED):
                continue
            alert = tr.alert
            labels = dict(alert.labels)
            self.result.alerts[f"{alert.name} {tr.to_state.value}"] += 1
            self.writer.alert(
                {
                    "at": self.writer.iso(tr.at),
                    "alertname": alert.name,
                    "state": tr.to_state.value,
                    "severity": labels.get("severity", ""),
                    "labels": labels,
                    "annotations": dict(alert.annotations),
                }
            )

    def summary(self) -> tuple[dict[str, Any], list[str]]:
        res = self.result
        doc: dict[str, Any] = {
            "at": self.writer.iso(res.last if res.last is not None else 0.0),
            "time_base": res.time_base,
            "records": res.records,
            "events": dict(res.events),
            "alerts": dict(res.alerts),
        }
        if self.ctx.boot_time is not None:
            doc["boot_time"] = iso(self.ctx.boot_time, self.ctx.tz)
        if self.engines:
            engines = self.busy.summary()
            doc["engines"] = engines["engines"]
            doc["verdict"] = _with_alerted_regressions(engines["verdict"], res.alerts)
        text = [
            f"replayed {res.records} records"
            + (
                f" from {self.writer.iso(res.first)} to {self.writer.iso(res.last)}"
                if res.first is not None and res.last is not None
                else ""
            )
            + ("" if res.time_base == WALL else f" ({res.time_base}: no wall-clock time)"),
            "events: " + (", ".join(f"{k} {v}" for k, v in sorted(res.events.items())) or "none"),
            "alerts: " + (", ".join(f"{k} {v}" for k, v in sorted(res.alerts.items())) or "none"),
        ]
        if self.engines:
            text += busy_text(doc["engines"], doc["verdict"], self.ctx.tz)
        return doc, text


REGRESSION_ALERTS = ("EngineStepRateRegression", "EngineDecodeBelowAnchor", "EngineDecodeCollapse")
_QUIET = ("no decode difference between busy periods", "no busy periods")


def _with_alerted_regressions(verdict: str, alerts: Mapping[str, int]) -> str:
    """The busy-period verdict, never saying "no difference" beside a speed alert that fired:
    the rules watch windows the period comparison does not (a 10-minute median, an anchor)."""
    fired = [name for name in REGRESSION_ALERTS if alerts.get(f"{name} firing")]
    if not fired:
        return verdict
    said = "; ".join(f"{name} fired" for name in fired)
    if verdict.startswith(_QUIET):
        return f"{said}: the rules found a slowdown the busy-period comparison does not show"
    return f"{said}\n{verdict}"


def engine_for(source: str, names: Mapping[str, str]) -> str | None:
    """The configured engine whose ``log`` names ``source``: the same text, the same file by
    its resolved path (``reg.log`` given while the config says ``/var/log/vllm/reg.log``), or a
    configured glob that matches the resolved path."""
    if source in names:
        return names[source]
    path = Path(source).resolve()
    for pattern, engine in names.items():
        configured = Path(pattern).expanduser()
        if configured.resolve() == path or fnmatch.fnmatchcase(str(path), str(configured)):
            return engine
    return None
