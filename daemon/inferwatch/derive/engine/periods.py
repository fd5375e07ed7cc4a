"""What the busy-period derivation reads and produces: stats windows in, busy periods out.

Only like is compared with like. A window that prefill dominates (prompt tokens/s above decode
tokens/s: a request arriving, an agent's long tool output) says nothing about decode speed and
is left out of a period's speed figures. The windows left are kept by the number of requests
running (a *cohort*), since per-request speed falls as the batch grows: a period's headline is
its most common concurrency, and two periods are compared only at a concurrency both saw.

Step rate here is per request: decode tokens/s ÷ MAL ÷ requests running, the engine's forward
steps per second (each step advances every running request by MAL tokens on average). With one
request running it equals ``inferwatch_engine_steps_per_second``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

STEP_RATE_BASIS = "per request: decode / MAL / running"


class StatsWindow(NamedTuple):
    """One stats window of one engine stream, as the derivations see it; None = unknown."""

    engine: str
    dp_rank: str | None
    at: float
    decode: float | None
    running: int | None
    mal: float | None = None
    steps: float | None = None  # decode / MAL over the whole batch (tokens per draft step)
    accepted: float | None = None
    drafts: float | None = None
    prefill: float | None = None

    @property
    def prefill_bound(self) -> bool:
        """Prefill dominated this window: its decode is low by nature, not by speed."""
        return self.prefill is not None and self.decode is not None and self.prefill > self.decode


class Cohort(NamedTuple):
    """A period's decode-bound windows at one concurrency: median decode and per-request step
    rate, MAL pooled from the counts (falling back to the median of the window MALs)."""

    windows: int
    decode: float | None
    mal: float | None
    step_rate: float | None


@dataclass(frozen=True, slots=True)
class BusyPeriod:
    """One busy period of one stream; the headline figures are those of its most common
    concurrency among decode-bound windows (``running``), every cohort in ``cohorts``."""

    engine: str
    dp_rank: str | None
    start: float
    end: float
    windows: int
    decode: float | None
    mal: float | None
    step_rate: float | None
    running: float | None
    cohorts: Mapping[int, Cohort] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "start": self.start, "end": self.end, "windows": self.windows,
            "decode": round_or_none(self.decode, 1), "mal": round_or_none(self.mal, 2),
            "step_rate": round_or_none(self.step_rate, 1), "running": self.running,
        }  # fmt: skip


def round_or_none(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)
