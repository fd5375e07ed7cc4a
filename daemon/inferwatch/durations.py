"""Prometheus durations (``90s``, ``1m30s``, ``2h``): the one parser of the daemon.

Rule files, promtool test files, the configuration, notification channels and the template
function ``parseDuration`` all read durations here, so that a duration means the same thing
wherever it is written. Callers keep their own framing (a bare number of seconds, a default,
their own error text) and catch :class:`DurationError`. Kept apart from the test-file model so
that loading rules does not load it.
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


def parse_duration_s(value: object) -> float:
    """:func:`parse_duration_ms` in seconds, as Prometheus's ``float64(d) / float64(time.Second)``
    gives them (``9ms`` is 0.009: one correctly rounded division, not a sum of rounded parts)."""
    return parse_duration_ms(value) / 1000


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
