"""Config defaults that code without the config models needs too (replay without ``--config``
must not import pydantic for three values): the models take their defaults from here."""

from __future__ import annotations

from typing import Final

SHIPPED_RULES: Final = "builtin:rules/*.yaml"
CORRELATION_WINDOW_S: Final = 2.0  # kernel.correlation_window
