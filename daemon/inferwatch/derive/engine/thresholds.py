"""An engine's alert thresholds, from its config entry, as the series the shipped rules compare
against (exported every tick by the daemon and by replay, so a rule never hard-codes a number
and a user changes one config value)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final, NamedTuple

from inferwatch.config.defaults import (
    ANCHOR_MIN_MAL,
    DECODE_ANCHOR,
    DECODE_COLLAPSE_RATIO,
    STATS_STALE_AFTER_S,
    STEP_RATE_REGRESSION_RATIO,
)
from inferwatch.event import Kind

if TYPE_CHECKING:
    from inferwatch.config.models import EngineConfig
    from inferwatch.store.tsdb import SeriesStore

ANCHOR: Final = "inferwatch_engine_decode_anchor_tokens_per_second"
MIN_MAL: Final = "inferwatch_engine_anchor_min_mal"
COLLAPSE: Final = "inferwatch_engine_decode_collapse_tokens_per_second"
COLLAPSE_RATIO: Final = "inferwatch_engine_decode_collapse_ratio"
STEP_RATIO: Final = "inferwatch_engine_step_rate_regression_ratio"
STALE_AFTER: Final = "inferwatch_engine_stats_stale_after_seconds"

HELP: Final = {
    ANCHOR: "Single-stream decode speed below which to suspect the stack "
    "(engines[].decode_anchor).",
    MIN_MAL: "Mean acceptance length at or above which the anchor applies "
    "(engines[].anchor_min_mal).",
    COLLAPSE: "Decode speed below which a busy engine has collapsed (engines[].decode_collapse; "
    "absent: a ratio of the engine's own usual decode).",
    COLLAPSE_RATIO: "Fraction of the engine's usual busy decode (upper quartile over 24 hours) "
    "below which it has collapsed, when engines[].decode_collapse is not set "
    "(engines[].decode_collapse_ratio).",
    STEP_RATIO: "Fraction of the usual single-stream step rate below which the stack regressed "
    "(engines[].step_rate_regression_ratio).",
    STALE_AFTER: "Seconds without a stats line, after one that showed requests running, before "
    "the engine's stats count as stale (engines[].stats_stale_after).",
}


class EngineThresholds(NamedTuple):
    decode_anchor: float = DECODE_ANCHOR
    anchor_min_mal: float = ANCHOR_MIN_MAL
    decode_collapse: float | None = None
    decode_collapse_ratio: float = DECODE_COLLAPSE_RATIO
    step_rate_regression_ratio: float = STEP_RATE_REGRESSION_RATIO
    stats_stale_after: float = STATS_STALE_AFTER_S

    @classmethod
    def of(cls, cfg: EngineConfig) -> EngineThresholds:
        return cls(
            cfg.decode_anchor,
            cfg.anchor_min_mal,
            cfg.decode_collapse,
            cfg.decode_collapse_ratio,
            cfg.step_rate_regression_ratio,
            cfg.stats_stale_after,
        )

    def samples(self) -> list[tuple[str, float]]:
        """(series name, value) for every threshold that is set."""
        out = [
            (ANCHOR, self.decode_anchor),
            (MIN_MAL, self.anchor_min_mal),
            (COLLAPSE_RATIO, self.decode_collapse_ratio),
            (STEP_RATIO, self.step_rate_regression_ratio),
            (STALE_AFTER, self.stats_stale_after),
        ]
        if self.decode_collapse is not None:
            out.append((COLLAPSE, self.decode_collapse))
        return out


def describe_thresholds(store: SeriesStore) -> None:
    for name, text in HELP.items():
        store.describe(name, Kind.GAUGE, text)
