"""What the page reads from the PromQL engine, as plain values: instant samples and curves."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

Points = list[tuple[float, float]]


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


__all__ = ["Curve", "Points", "Sample", "number"]
