"""Deciding whether and when to try a notification again; the one place retry policy lives.

Channels only *classify* (an :class:`Outcome`: ok, retry with an optional provider hint, or
permanent); the delivery loop asks :class:`RetryPolicy` when the next attempt is due. Upstream
Alertmanager ignores ``Retry-After`` and retries a dead receiver ~200 times in 10 minutes without
jitter (notify.md §4.1 items 2-3): here backoff is exponential with full jitter, bounded by a
per-message deadline, and provider hints win over the computed delay.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from enum import StrEnum

import httpx

from inferwatch.redact import redact


class OutcomeKind(StrEnum):
    OK = "ok"
    RETRY = "retry"
    PERMANENT = "permanent"


@dataclass(frozen=True, slots=True)
class Outcome:
    """The verdict on one attempt. ``maybe_delivered`` marks ambiguous failures (the request may
    have arrived), which are safe to retry only against a receiver honouring an idempotency key."""

    kind: OutcomeKind
    reason: str = ""
    retry_after: float | None = None
    status: int | None = None
    maybe_delivered: bool = False

    @classmethod
    def ok(cls, status: int | None = None) -> Outcome:
        return cls(OutcomeKind.OK, status=status)

    @classmethod
    def retry(cls, reason: str, after: float | None = None, status: int | None = None) -> Outcome:
        return cls(OutcomeKind.RETRY, redact(reason), after, status)

    @classmethod
    def permanent(cls, reason: str, status: int | None = None) -> Outcome:
        return cls(OutcomeKind.PERMANENT, redact(reason), status=status)


def parse_retry_after(value: str | None, now: float) -> float | None:
    """``Retry-After`` as seconds from ``now``: delta-seconds or an HTTP-date; junk is ignored."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - now)


def body_retry_after(body: bytes | str | None) -> float | None:
    """A JSON body's ``retry_after`` (Discord) or ``parameters.retry_after`` (Telegram)."""
    if not body:
        return None
    try:
        doc = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(doc, dict):
        return None
    params = doc.get("parameters")
    for holder in (doc, params if isinstance(params, dict) else {}):
        hint = holder.get("retry_after")
        if isinstance(hint, int | float) and not isinstance(hint, bool) and hint >= 0:
            return float(hint)
    return None


def classify_http(
    status: int,
    body: bytes | str | None = None,
    headers: Mapping[str, str] | None = None,
    now: float = 0.0,
) -> Outcome:
    """2xx ok; 408, 429 and 5xx retry (honouring ``Retry-After`` or a body hint); other codes
    are permanent: resending a request the receiver rejected cannot succeed."""
    if 200 <= status < 300:
        return Outcome.ok(status)
    if status in (408, 429) or status >= 500:
        header = None
        if headers is not None:
            raw = headers.get("retry-after") or headers.get("Retry-After")
            header = parse_retry_after(raw, now)
        hint = header if header is not None else body_retry_after(body)
        return Outcome.retry(f"HTTP {status}", hint, status)
    return Outcome.permanent(f"HTTP {status}", status)


def classify_exception(exc: BaseException) -> Outcome:
    """Transport errors retry. Connect/pool failures sent nothing; a read timeout or a broken
    response may have been delivered, so those are flagged ``maybe_delivered``."""
    name = type(exc).__name__
    text = redact(f"{name}: {exc}")
    if isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout | httpx.PoolTimeout):
        return Outcome.retry(text)
    if isinstance(exc, httpx.TransportError | TimeoutError | OSError):
        return Outcome(OutcomeKind.RETRY, text, maybe_delivered=True)
    return Outcome.permanent(text)


@dataclass(frozen=True, slots=True)
class Backoff:
    """Exponential backoff (``base * 2**n``, capped) with full jitter, so that many failing
    messages do not hammer a recovering receiver in lockstep."""

    base: float = 1.0
    cap: float = 300.0

    def delay(self, attempt: int, rand: Callable[[], float]) -> float:
        ceiling = min(self.cap, self.base * 2.0 ** min(attempt, 60))
        return rand() * ceiling


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """When to try again: ``None`` means give up (permanent, or past the deadline)."""

    backoff: Backoff = Backoff()
    deadline: float = 24 * 3600.0
    rand: Callable[[], float] = random.random

    def next_attempt_at(
        self, outcome: Outcome, attempts: int, created_at: float, now: float
    ) -> float | None:
        """``attempts`` counts tries made so far, including the one that gave ``outcome``."""
        if outcome.kind is not OutcomeKind.RETRY:
            return None
        if outcome.retry_after is not None:
            delay = outcome.retry_after
        else:
            delay = self.backoff.delay(max(0, attempts - 1), self.rand)
        when = now + delay
        if when > created_at + self.deadline:
            return None
        return when
