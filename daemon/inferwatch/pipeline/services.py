"""A watched service (``services[]``): a polled source named ``service:NAME`` that probes the
service, debounces the result and writes its series and ``service_state`` events.

A failing probe is a result, not a source error: the source stays up (``inferwatch_source_up
1``) whatever the service does; only a service none of whose checks can run here is "no data".
Observe only: nothing here restarts, signals or loads the service.
"""

from __future__ import annotations

from typing import Any

from inferwatch.clock import Clock
from inferwatch.config.models import ServiceConfig
from inferwatch.derive.effects import CounterInc, Effect, GaugeSet, SeriesEnd
from inferwatch.derive.service_state import (
    STATES,
    Debouncer,
    DebounceSettings,
    Observation,
    ServiceState,
    Transition,
)
from inferwatch.errors import NoData
from inferwatch.event import Event, Kind
from inferwatch.labels import Labels, make_labels
from inferwatch.pipeline.service_checks import CheckResult, ServiceChecker
from inferwatch.pipeline.sink import EventSink, apply_effects
from inferwatch.store.tsdb import SeriesStore

STATE = "inferwatch_service_state"
SUCCESS = "inferwatch_probe_success"
DURATION = "inferwatch_probe_duration_seconds"
RESTARTS = "inferwatch_service_restarts_total"
HELP = {
    STATE: (Kind.GAUGE, "1 for the service's debounced state (starting, up, down, flapping)."),
    SUCCESS: (Kind.GAUGE, "1 if the service's check passed at the last probe, else 0."),
    DURATION: (Kind.GAUGE, "How long the service's check took at the last probe."),
    RESTARTS: (Kind.COUNTER, "Times the service's main process was seen replaced."),
}
STARTUP = "startup"  # a check of its own: 0 once a start-up has outlasted startup_grace
MAX_TIMEOUT_S = 5.0


class ServiceWatch:
    """A ``PolledSource`` whose ``poll`` applies its own results (it has no record to emit)."""

    def __init__(
        self,
        cfg: ServiceConfig,
        store: SeriesStore,
        sink: EventSink,
        clock: Clock,
        run_blocking: Any,
    ) -> None:
        self.cfg = cfg
        self.name = f"service:{cfg.name}"
        self.interval = cfg.interval
        self.store = store
        self.sink = sink
        self.clock = clock
        self.checker = ServiceChecker(cfg, run_blocking, min(MAX_TIMEOUT_S, cfg.interval))
        self.debouncer = Debouncer(
            DebounceSettings(
                up_after=cfg.up_after,
                down_after=cfg.down_after,
                startup_grace=cfg.startup_grace,
                flap_changes=cfg.flap_changes,
                flap_window=cfg.flap_window,
            )
        )
        self.labels = make_labels({"service": cfg.name, "engine": cfg.engine or ""})
        self.results: list[CheckResult] = []
        self.main_pid: int | None = None
        self.restarts = 0
        for name, (kind, text) in HELP.items():
            store.describe(name, kind, text)

    def _with(self, **extra: str) -> Labels:
        return make_labels({**dict(self.labels), **extra})

    async def poll(self) -> None:
        at = self.clock.time()
        found = await self.checker.probe()
        if not found.results:
            raise NoData(f"no check of service {self.cfg.name} can run here")
        effects: list[Effect] = []
        gone = {r.check for r in self.results} - {r.check for r in found.results}
        for check in sorted(gone):  # a check that stopped running here ends its series
            effects.append(SeriesEnd(SUCCESS, self._with(check=check), at))
            effects.append(SeriesEnd(DURATION, self._with(check=check), at))
        for r in found.results:
            effects.append(GaugeSet(SUCCESS, self._with(check=r.check), float(r.ok), at))
            effects.append(GaugeSet(DURATION, self._with(check=r.check), r.seconds, at))
        self.results = found.results
        effects.extend(self._restart(found.main_pid, at))
        failed = found.failed
        obs = Observation(
            at,
            failed is None,
            failed.check if failed else "",
            failed.detail if failed else "",
            found.alive,
            found.started_at,
        )
        change = self.debouncer.observe(obs)
        state = self.debouncer.state
        if state is not ServiceState.UNKNOWN:
            for s in STATES:
                effects.append(GaugeSet(STATE, self._with(state=s.value), float(s is state), at))
            overdue = self.debouncer.overdue(at)
            effects.append(GaugeSet(SUCCESS, self._with(check=STARTUP), float(not overdue), at))
        if change is not None:
            effects.append(self._event(change))
        await apply_effects(effects, self.store, self.sink)

    def _restart(self, pid: int | None, at: float) -> list[Effect]:
        if pid is None:
            return []
        previous, self.main_pid = self.main_pid, pid
        if previous is None:  # the first process seen: the counter starts (or goes on) here
            return [CounterInc(RESTARTS, self.labels, 0.0, at, alertable=False)]
        if pid == previous:
            return []
        self.restarts += 1
        return [CounterInc(RESTARTS, self.labels, 1.0, at)]

    def _event(self, change: Transition) -> Event:
        details = {
            "service": self.cfg.name,
            "engine": self.cfg.engine,
            "from": change.old.value,
            "to": change.new.value,
            "check": change.check,
            "reason": change.reason,
        }
        return Event(
            "service_state",
            change.at,
            self.name,
            f"{self.name}:{change.at:.6f}:{change.new.value}",
            labels=dict(self.labels),
            details=details,
        )

    def status(self) -> dict[str, Any]:
        """This service in ``/api/v1/status`` (``services``)."""
        d = self.debouncer
        return {
            "name": self.cfg.name,
            "engine": self.cfg.engine,
            "state": d.state.value,
            "since": d.since,
            "failed_check": d.check if d.state is not ServiceState.UP else "",
            "reason": d.reason if d.state is not ServiceState.UP else "",
            "startup_overdue": d.overdue(self.clock.time()),
            "main_pid": self.main_pid,
            "restarts_seen": self.restarts,
            "checks": {
                r.check: {"ok": r.ok, "seconds": round(r.seconds, 4), "detail": r.detail}
                for r in self.results
            },
        }

    async def aclose(self) -> None:
        await self.checker.aclose()
