"""What the busy-period derivation reads and produces: stats windows in, busy periods out."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class StatsWindow:
    """One stats window of one engine stream, as the derivations see it; None = unknown."""

    engine: str
    dp_rank: str | None
    at: float
    decode: float | None
    running: int | None
    mal: float | None = None
    steps: float | None = None
    accepted: float | None = None
    drafts: float | None = None


@dataclass(frozen=True, slots=True)
class BusyPeriod:
    """One busy period of one stream: median decode, step rate and running; MAL pooled."""

    engine: str
    dp_rank: str | None
    start: float
    end: float
    windows: int
    decode: float | None
    mal: float | None
    step_rate: float | None
    running: float | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "start": self.start, "end": self.end, "windows": self.windows,
            "decode": round_or_none(self.decode, 1), "mal": round_or_none(self.mal, 2),
            "step_rate": round_or_none(self.step_rate, 1), "running": self.running,
        }  # fmt: skip


def round_or_none(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)
