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
