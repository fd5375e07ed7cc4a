"""Which input writes an engine's speed series: /metrics while its scrape is up, else the log.

Both ``engine_log`` and ``engine_metrics`` write the same names with the same labels
(``engine_names.ARBITRATED``). /metrics is preferred (exact counters, no idle suppression, no
window alignment guesswork); the log fills in where /metrics cannot: no scrape configured, the
scrape is down, or this engine's /metrics lacks the inputs for a series (0.8-era vLLM has no
drafts counter, so no MAL). One series must never interleave values from the two.

The rule, per engine and series *name* (not per label set, because the log's
``N Engines Aggregated`` line has no ``dp_rank`` while /metrics has one per engine):

- /metrics *claims* a name on every successful scrape whose samples can produce it
  (``ScrapeResult.claims``), whether or not a value came out this time (an idle interval gives
  no MAL, and that must not hand MAL to the log for one window);
- a claim holds while the scrape is up and for ``hold`` seconds after the last claiming scrape;
  ``metrics_down`` releases every claim of the engine at once;
- while a claim holds, the log's samples and staleness markers for that name are dropped;
- when /metrics claims a name the log has been writing, the log's series of that name get a
  staleness marker (series with other label sets would otherwise linger for five minutes), and
  when the scrape fails ``EngineMetricsDeriver.down`` ends the /metrics series, so the log's
  next window starts cleanly.

The daemon wires it as::

    result = metrics.feed(parse_exposition(text), at)        # on a scrape record
    apply(arbiter.from_metrics(result), store)
    apply(metrics.down(at), store); arbiter.metrics_down(engine)   # on a failed scrape
    apply(arbiter.from_log(pipeline.feed(record, at, ...)), store)  # on a log line

Pure and clock-free: time comes from the effects and results.
"""

from __future__ import annotations

from collections.abc import Iterable

from inferwatch.derive.effects import Effect, GaugeSet, SeriesEnd
from inferwatch.derive.engine.metrics import ScrapeResult
from inferwatch.derive.engine.names import ARBITRATED
from inferwatch.labels import Labels, label_value

LOG = "log"
METRICS = "metrics"


class EngineRateArbiter:
    """Shared by every engine of the daemon; ``hold`` is about three scrape intervals."""

    __slots__ = ("_claims", "_log_series", "_up", "hold")

    def __init__(self, hold: float = 60.0) -> None:
        self.hold = hold
        self._claims: dict[tuple[str, str], float] = {}  # (engine, name) -> last claim time
        self._up: dict[str, bool] = {}
        self._log_series: dict[tuple[str, str], set[Labels]] = {}

    def owner(self, engine: str, name: str, at: float) -> str:
        """``"metrics"`` or ``"log"``: who may write ``name`` for ``engine`` at time ``at``."""
        if name not in ARBITRATED or not self._up.get(engine, False):
            return LOG
        claimed = self._claims.get((engine, name))
        return METRICS if claimed is not None and at - claimed <= self.hold else LOG

    def from_metrics(self, result: ScrapeResult) -> list[Effect]:
        """A successful scrape: record its claims; its effects, preceded by staleness markers
        for the log's series that /metrics takes over."""
        engine = result.engine
        self._up[engine] = True
        out: list[Effect] = []
        for name in result.claims:
            self._claims[(engine, name)] = result.at
            for labels in self._log_series.pop((engine, name), ()):
                out.append(SeriesEnd(name, labels, result.at))
        out.extend(result.effects)
        return out

    def metrics_down(self, engine: str) -> None:
        """The scrape failed: the log writes every series again from its next window."""
        self._up[engine] = False
        for key in [k for k in self._claims if k[0] == engine]:
            del self._claims[key]

    def from_log(self, effects: Iterable[Effect]) -> list[Effect]:
        """The log's effects minus the samples of series /metrics owns right now."""
        out: list[Effect] = []
        for effect in effects:
            if isinstance(effect, GaugeSet | SeriesEnd) and effect.name in ARBITRATED:
                engine = label_value(effect.labels, "engine")
                if self.owner(engine, effect.name, effect.at) == METRICS:
                    continue
                if isinstance(effect, GaugeSet):
                    self._log_series.setdefault((engine, effect.name), set()).add(effect.labels)
            out.append(effect)
        return out
