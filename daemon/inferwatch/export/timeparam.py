"""Times in query parameters (``/api/v1/events?since=…``): Unix seconds, RFC 3339, or a
duration back from now (``10m``, ``1h30m``, Prometheus's units), so ``since=10m`` means the
last ten minutes."""

from __future__ import annotations

import math
from datetime import datetime

from inferwatch.config.types import parse_duration

ACCEPTED = "Unix seconds, an RFC 3339 time with a zone, or a duration such as 10m"


def parse_time_param(value: str, now: float) -> float:
    """A time for ``value``; ``ValueError`` naming the accepted forms otherwise."""
    text = value.strip()
    try:
        number = float(text)
    except ValueError:
        pass
    else:
        if math.isfinite(number):
            return number
        raise ValueError(f"{value!r} is not a time: use {ACCEPTED}")
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        pass
    else:
        if when.tzinfo is None:
            raise ValueError(f"{value!r} has no zone: add Z or an offset such as +08:00")
        return when.timestamp()
    try:
        return now - parse_duration(text)
    except (ValueError, TypeError):
        raise ValueError(f"{value!r} is not a time: use {ACCEPTED}") from None


__all__ = ["ACCEPTED", "parse_time_param"]
