"""``python -m inferwatch``."""

from __future__ import annotations

from inferwatch.cli import console

console()
