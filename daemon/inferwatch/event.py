"""What every layer names alike: the events kept in the event log and the kinds of series.

Apart from :mod:`inferwatch.model` (the records sources put on the bus), so that what derives and
stores, replay among it, imports these two without making the bus records it never uses.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class Kind(StrEnum):
    """A series' type, as Prometheus's exposition names it."""

    COUNTER = "counter"
    GAUGE = "gauge"
    HISTOGRAM = "histogram"  # metadata only: stored as _bucket/_sum/_count counter series


@dataclass(frozen=True, slots=True)
class Event:
    """A discrete happening (an Xid, a crash, a start-up) kept in the event log.

    ``key`` makes inserting idempotent: re-reading a record after a crash yields the same key.
    """

    type: str
    at: float
    source: str
    key: str
    line: int | None = None
    labels: Mapping[str, str] = field(default_factory=dict)
    details: Mapping[str, Any] = field(default_factory=dict)
