"""One engine log through every engine derivation: the one object the daemon and replay feed.

It only composes: ``EngineLogDeriver`` (speed series, start-up facts), ``EngineCrashTracker``
(crash incidents) and a ``BusyPeriods`` (busy periods and the verdict), which replay shares
across its engines to print one summary. Records go in log order with their wall time; the
effects come back for ``effects.apply`` (daemon: through ``EngineRateArbiter.from_log`` first).
Pure and clock-free, like its parts; ``flush(now)`` from the daemon's tick decides crash chains
of a quiet log, ``flush()`` at the end of a replay decides everything.
"""

from __future__ import annotations

import math
from typing import Any

from inferwatch.derive.effects import Effect
from inferwatch.derive.engine.busy import BusyPeriods
from inferwatch.derive.engine.crash import EngineCrashTracker
from inferwatch.derive.engine.liveness import CrashState, shows_life
from inferwatch.derive.engine.log import EngineLogDeriver, Keeping
from inferwatch.parsers.engine_records import EngineRecord


class EngineLogPipeline:
    __slots__ = ("busy", "crashes", "engine", "liveness", "log")

    def __init__(
        self,
        engine: str,
        *,
        speculative: bool | None = None,
        num_speculative_tokens: int | None = None,
        crash_window: float = 5.0,
        busy: BusyPeriods | None = None,
        keeping: Keeping | None = None,
    ) -> None:
        self.engine = engine
        self.busy = busy if busy is not None else BusyPeriods()
        self.log = EngineLogDeriver(
            engine,
            speculative=speculative,
            num_speculative_tokens=num_speculative_tokens,
            on_window=self.busy.add,
            keeping=keeping,
        )
        self.crashes = EngineCrashTracker(engine, window=crash_window)
        self.liveness = CrashState()

    def feed(
        self, record: EngineRecord | None, at: float, line: int, source: str, key: str
    ) -> list[Effect]:
        """One line's record (None when the line parsed to nothing: the crash grouper counts
        those lines too)."""
        out = self.log.feed(record, at, line, source, key) if record is not None else []
        if shows_life(record):
            out += self.liveness.alive(at)
        crash = self.crashes.feed(record, at, line, source, key)
        return out + self.liveness.after_crash(crash) if crash else out

    def flush(self, now: float = math.inf) -> list[Effect]:
        self.log.flush(now)
        crash = self.crashes.flush(now)
        return self.liveness.after_crash(crash) if crash else crash

    def metrics_back(self, at: float) -> list[Effect]:
        """The engine's /metrics answers again after it failed: evidence the engine is back."""
        return self.liveness.alive(at)

    def summary(self) -> dict[str, Any]:
        """Busy periods per engine stream with decode, MAL and step rate, and the verdict."""
        return self.busy.summary()
