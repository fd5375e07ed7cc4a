"""What a replay takes from the config: engine names and thresholds, external labels, rule
files and the kernel correlation window. Without ``--config`` these are the embedded defaults,
read from ``config.defaults`` so that a replay never loads the config models (pydantic) for them;
a test holds :meth:`ReplaySettings.defaults` equal to :meth:`ReplaySettings.of` ``Config()``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from inferwatch.config.defaults import CORRELATION_WINDOW_S, SHIPPED_RULES
from inferwatch.derive.engine.thresholds import EngineThresholds

if TYPE_CHECKING:
    from inferwatch.config.models import Config


@dataclass(frozen=True, slots=True)
class ReplaySettings:
    correlation_window: float = CORRELATION_WINDOW_S
    engine_names: dict[str, str] = field(default_factory=dict)  # log path -> engine name
    engine_thresholds: dict[str, EngineThresholds] = field(default_factory=dict)
    external_labels: dict[str, str] = field(default_factory=dict)
    rule_files: tuple[str, ...] = (SHIPPED_RULES,)

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
        )
