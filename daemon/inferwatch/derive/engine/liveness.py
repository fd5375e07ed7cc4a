"""Whether a crashed engine has been seen back: ``inferwatch_engine_crashed{engine, signature}``.

A crash sets the gauge to 1; only evidence that the engine is back sets it to 0: a start-up fact
(a new process starting, or ready), a stats line, or the engine's /metrics answering again after
it stopped. Nothing sets it back on a timer, so ``EngineCrashed`` resolves when the engine is
back, and a dead engine stays paged (with its route's repeat interval) instead of "recovering"
after five minutes. Evidence older than the crash does not count: a crash chain is decided a few
seconds after its lines, and a restart printed in that time still clears it.

Pure and clock-free: effects in, effects out.
"""

from __future__ import annotations

from inferwatch.derive.effects import CounterInc, Effect, GaugeSet
from inferwatch.derive.engine import names as n
from inferwatch.labels import Labels
from inferwatch.parsers.engine_records import EngineRecord, EngineStats, StartupFact


class CrashState:
    __slots__ = ("_crashed", "_seen_alive")

    def __init__(self) -> None:
        self._crashed: dict[Labels, float] = {}  # engine+signature labels -> crash time
        self._seen_alive = float("-inf")

    def after_crash(self, effects: list[Effect]) -> list[Effect]:
        """The crash counter's increments among ``effects``, each followed by its gauge at 1
        (and at 0 at once when the engine was already seen back since)."""
        out: list[Effect] = []
        for effect in effects:
            out.append(effect)
            if isinstance(effect, CounterInc) and effect.name == n.CRASHES:
                out.append(GaugeSet(n.CRASHED, effect.labels, 1.0, effect.at))
                if self._seen_alive > effect.at:
                    out.append(GaugeSet(n.CRASHED, effect.labels, 0.0, self._seen_alive))
                else:
                    self._crashed[effect.labels] = effect.at
        return out

    def alive(self, at: float) -> list[Effect]:
        """The engine was seen working at ``at``: every crash before it is over."""
        self._seen_alive = max(self._seen_alive, at)
        over = [labels for labels, when in self._crashed.items() if when < at]
        for labels in over:
            del self._crashed[labels]
        return [GaugeSet(n.CRASHED, labels, 0.0, at) for labels in over]


def shows_life(record: EngineRecord | None) -> bool:
    """A stats line, or a start-up fact (the engine starting again or ready)."""
    return isinstance(record, EngineStats | StartupFact)
