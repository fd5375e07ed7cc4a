"""What a replay takes from the config: engine names and thresholds, external labels, rule
files, the kernel correlation window and the limits. Without ``--config`` these are the embedded
defaults, read from ``config.defaults`` so that a replay never loads the config models
(pydantic) for them; a test holds :meth:`ReplaySettings.defaults` equal to
:meth:`ReplaySettings.of` ``Config()``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from inferwatch.config.defaults import (
    ALERTS_PER_RULE,
    CORRELATION_WINDOW_S,
    LABEL_VALUES,
    SERIES_PER_METRIC,
    SERIES_TOTAL,
    SHIPPED_RULES,
)
from inferwatch.derive.engine.thresholds import EngineThresholds
from inferwatch.store.limits import SeriesLimits

if TYPE_CHECKING:
    from inferwatch.config.models import Config


@dataclass(frozen=True, slots=True)
class ReplaySettings:
    correlation_window: float = CORRELATION_WINDOW_S
    engine_names: dict[str, str] = field(default_factory=dict)  # log path -> engine name
    engine_thresholds: dict[str, EngineThresholds] = field(default_factory=dict)
    external_labels: dict[str, str] = field(default_factory=dict)
    rule_files: tuple[str, ...] = (SHIPPED_RULES,)
    limits: SeriesLimits = field(
        default_factory=lambda: SeriesLimits(SERIES_TOTAL, SERIES_PER_METRIC, dict(LABEL_VALUES))
    )
    alerts_per_rule: int = ALERTS_PER_RULE

    @classmethod
    def defaults(cls) -> ReplaySettings:
        return cls()

    @classmethod
    def of(cls, config: Config) -> ReplaySettings:
        return cls(
            correlation_window=config.kernel.correlation_window,
            engine_names={p: e.name for e in config.engines for p in e.log},
            engine_thresholds={e.name: EngineThresholds.of(e) for e in config.engines},
            external_labels=dict(config.external_labels),
            rule_files=tuple(config.rule_files),
            limits=SeriesLimits(
                config.limits.series_total,
                config.limits.series_per_metric,
                dict(config.limits.label_values),
            ),
            alerts_per_rule=config.limits.alerts_per_rule,
        )
