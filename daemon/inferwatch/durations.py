"""Prometheus durations (``90s``, ``1m30s``, ``2h``) as rule files and test files write them.

Kept apart from the test-file model so that loading rules does not load it.
"""

from __future__ import annotations

import re


class DurationError(ValueError):
    """Not a duration Prometheus would accept."""


_UNITS_MS = {"y": 31_536_000_000, "w": 604_800_000, "d": 86_400_000, "h": 3_600_000}
_UNITS_MS |= {"m": 60_000, "s": 1000, "ms": 1}
_DURATION = re.compile(
    r"(?:(\d+)y)?(?:(\d+)w)?(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?(?:(\d+)ms)?"
)


def parse_duration_ms(value: object) -> int:
    """Prometheus's duration (``0``, ``90s``, ``1m30s``, ``2h``) in milliseconds."""
    text = str(value)
    if text == "0":
        return 0
    m = _DURATION.fullmatch(text)
    if not text or m is None:
        raise DurationError(f"not a valid duration string: {text!r}")
    total = 0
    for amount, unit in zip(m.groups(), ("y", "w", "d", "h", "m", "s", "ms"), strict=True):
        if amount is not None:
            total += int(amount) * _UNITS_MS[unit]
    return total


def format_duration_ms(ms: int) -> str:
    """Prometheus's ``model.Duration.String()``: ``0s``, ``5m``, ``1m30s``, ``1s500ms``."""
    if ms == 0:
        return "0s"
    out = ""
    for unit, exact in (("y", True), ("w", True), ("d", False), ("h", False), ("m", False)):
        mult = _UNITS_MS[unit]
        if (exact and ms % mult) or ms < mult:
            continue
        out += f"{ms // mult}{unit}"
        ms %= mult
    for unit in ("s", "ms"):
        mult = _UNITS_MS[unit]
        if ms >= mult:
            out += f"{ms // mult}{unit}"
            ms %= mult
    return out
