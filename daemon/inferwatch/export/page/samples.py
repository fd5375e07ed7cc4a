"""What the page reads from the PromQL engine, as plain values: instant samples and curves."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

Points = list[tuple[float, float]]
TimeText = Callable[[float | None], str]


@dataclass(frozen=True, slots=True)
class Sample:
    """One element of an instant query: labels (with ``__name__``) and value."""

    metric: Mapping[str, str]
    value: float

    @property
    def name(self) -> str:
        return self.metric.get("__name__", "")


@dataclass(frozen=True, slots=True)
class Curve:
    """One series of a range query."""

    metric: Mapping[str, str]
    points: Points


def number(v: float | None, digits: int = 1) -> str:
    if v is None or math.isnan(v):
        return "–"
    return f"{v:.{digits}f}"


def stamp(t: float | None) -> str:
    """UTC, to the second: the page is read from anywhere."""
    if t is None:
        return ""
    return dt.datetime.fromtimestamp(t, dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def since_boot(t: float | None) -> str:
    """A boot-relative replay's time: seconds since boot, never a date in 1970."""
    return "" if t is None else f"boot +{t:.3f} s"


__all__ = ["Curve", "Points", "Sample", "TimeText", "number", "since_boot", "stamp"]
