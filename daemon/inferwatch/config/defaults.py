"""Config defaults that code without the config models needs too (replay without ``--config``
must not import pydantic for three values): the models take their defaults from here."""

from __future__ import annotations

import socket
from typing import Final

SHIPPED_RULES: Final = "builtin:rules/*.yaml"
CORRELATION_WINDOW_S: Final = 2.0  # kernel.correlation_window


def default_external_labels(configured: dict[str, str]) -> dict[str, str]:
    """``external_labels`` as rules and messages see them: ``host`` defaults to the hostname."""
    labels = dict(configured)
    labels.setdefault("host", socket.gethostname())
    return labels


# engines[] thresholds (the config models and replay without --config take them from here)
DECODE_ANCHOR: Final = 90.0  # t/s: single-stream decode below which to suspect the stack
ANCHOR_MIN_MAL: Final = 2.4  # the anchor applies at or above this mean acceptance length
DECODE_COLLAPSE_RATIO: Final = 0.25  # of the engine's usual busy decode (24-h upper quartile)
STEP_RATE_REGRESSION_RATIO: Final = 0.85  # of the usual single-stream step rate
STATS_STALE_AFTER_S: Final = 30.0  # no stats line this long while requests ran (3 intervals)

# limits: what the host's own words may make (series born from log lines, rules' outputs)
SERIES_TOTAL: Final = 20_000  # series in the store (a busy 8-GPU host holds a few thousand)
SERIES_PER_METRIC: Final = 2_000  # series of one metric name
LABEL_VALUES: Final = {"dp_rank": 64, "position": 32}  # values per label, per metric
ALERTS_PER_RULE: Final = 1_000  # a rule's alerts (Prometheus's group `limit` where none is set)
