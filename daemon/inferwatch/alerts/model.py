"""Alerts and their transitions, as the notification pipeline and the API see them.

An alert is identified by its final label set (series labels + templated rule labels +
``alertname``); annotations are not identity. States are Prometheus's, with the resolved phase
named: ``PENDING`` while ``for`` runs, ``FIRING``, then ``RESOLVED`` (kept 15 minutes, as
Prometheus keeps it to resend). ``INACTIVE`` is "no such alert": the state a new alert comes from
and the state a pending alert returns to when its condition goes away before ``for`` elapsed.
Sending is not the alert's business: there is no LastSentAt here.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, NamedTuple

from inferwatch.labels import Labels

ALERTNAME = "alertname"


class RuleKey(NamedTuple):
    """What makes a rule "the same rule" across a reload or a restart."""

    file: str
    group: str
    name: str
    expr: str
    labels: Labels


class AlertState(StrEnum):
    INACTIVE = "inactive"
    PENDING = "pending"
    FIRING = "firing"
    RESOLVED = "resolved"


Pairs = tuple[tuple[str, str], ...]


class LazyAnnotations:
    """Annotations expanded when first read (iterated, compared, hashed). An alert's
    annotations are expanded afresh at every evaluation while its value moves (``$value`` in a
    summary), yet only a transition, the API or a snapshot reads them: a pending alert's
    expansions are mostly never read. Only templates that never ``query`` may wait (their text
    is a pure function of the alert's labels and value); the rest are expanded at evaluation
    time and passed in done."""

    __slots__ = ("_make", "_pairs")

    def __init__(self, make: Callable[[], Pairs]) -> None:
        self._make: Callable[[], Pairs] | None = make
        self._pairs: Pairs | None = None

    def pairs(self) -> Pairs:
        if self._pairs is None:
            assert self._make is not None
            self._pairs, self._make = self._make(), None
        return self._pairs

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return iter(self.pairs())

    def __len__(self) -> int:
        return len(self.pairs())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, LazyAnnotations):
            other = other.pairs()
        return self.pairs() == other

    def __hash__(self) -> int:
        return hash(self.pairs())

    def __repr__(self) -> str:
        return repr(self.pairs())


Annotations = Pairs | LazyAnnotations
"""Sorted (name, text) pairs; unlike labels, an annotation may be empty."""


@dataclass(frozen=True, slots=True)
class Alert:
    """A snapshot of one alert; times are Unix seconds."""

    rule: RuleKey
    labels: Labels
    annotations: Annotations
    state: AlertState
    value: float
    active_at: float
    fired_at: float | None = None
    resolved_at: float | None = None
    keep_firing_since: float | None = None
    last_eval: float = 0.0

    @property
    def name(self) -> str:
        return self.label(ALERTNAME)

    def label(self, name: str) -> str:
        for k, v in self.labels:
            if k == name:
                return v
        return ""

    def annotation(self, name: str) -> str:
        for k, v in self.annotations:
            if k == name:
                return v
        return ""

    @property
    def fingerprint(self) -> str:
        """A stable id of the label set (16 hex digits), for grouping, dedup and the API."""
        text = "\xff".join(f"{k}\xfe{v}" for k, v in self.labels)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    @property
    def is_active(self) -> bool:
        return self.state in (AlertState.PENDING, AlertState.FIRING)

    def to_dict(self) -> dict[str, Any]:
        """The API's view (``/api/v1/alerts``), Prometheus-like."""
        return {
            "labels": dict(self.labels),
            "annotations": dict(self.annotations),
            "state": self.state.value,
            "activeAt": self.active_at,
            "firedAt": self.fired_at,
            "resolvedAt": self.resolved_at,
            "value": self.value,
            "fingerprint": self.fingerprint,
        }


class AlertTransition(NamedTuple):
    """An alert changed state at ``at``; ``alert`` is its snapshot after the change."""

    alert: Alert
    from_state: AlertState
    to_state: AlertState
    at: float

    @property
    def fired(self) -> bool:
        return self.to_state is AlertState.FIRING

    @property
    def resolved(self) -> bool:
        return self.to_state is AlertState.RESOLVED
