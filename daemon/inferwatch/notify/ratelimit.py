"""Per-channel-instance token buckets and pauses, below each provider's documented limit.

Every configured integration (one WeCom robot, one Telegram chat...) has a :class:`Gate`: a token
bucket sized so that no sliding window can exceed the provider's limit (burst + window * rate ≤
limit, notify.md §3 table and §4 "Token bucket per channel instance"), and a pause that a
provider's rate-limit answer (WeCom 45009, DingTalk 130101, Feishu 11232, ntfy/Telegram/Discord
429 with ``retry_after``) sets for the whole channel, not just the message that met it. A row
that finds no token stays queued, untouched, and its group's later messages merge into it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Limit:
    """``burst`` messages at once, then ``per_minute`` on average."""

    per_minute: float
    burst: int


LIMITS: dict[str, Limit] = {
    "wecom": Limit(15.0, 5),  # 20/min per robot
    "dingtalk": Limit(15.0, 5),  # 20/min, then ~10 min throttle
    "feishu": Limit(80.0, 5),  # 100/min and 5/s
    "telegram": Limit(18.0, 1),  # ~1/s per chat, 20/min per group
    "slack": Limit(60.0, 1),  # 1/s, short bursts
    "discord": Limit(25.0, 5),  # 5 per 2 s, 30/min per webhook
    "ntfy": Limit(12.0, 10),  # ntfy.sh: burst 60, then one per 5 s
}
"""Documented provider limits, with margin; kinds not listed are not limited here."""


class Gate:
    """May this channel instance send now? Time is passed in; nothing here reads a clock."""

    def __init__(self, limit: Limit | None) -> None:
        self.limit = limit
        self.tokens = float(limit.burst) if limit else math.inf
        self.updated: float | None = None
        self.paused_until = -math.inf

    def _refill(self, now: float) -> None:
        if self.limit is None:
            return
        if self.updated is not None and now > self.updated:
            rate = self.limit.per_minute / 60.0
            self.tokens = min(float(self.limit.burst), self.tokens + (now - self.updated) * rate)
        self.updated = now if self.updated is None else max(self.updated, now)

    def try_take(self, now: float) -> bool:
        """Take a token if the channel is not paused and one is there."""
        if now < self.paused_until:
            return False
        self._refill(now)
        if self.tokens < 1.0:
            return False
        self.tokens -= 1.0
        return True

    def pause(self, until: float, now: float) -> None:
        """The provider said "too fast": nothing leaves before ``until``, and the bucket starts
        empty after it, so sending resumes at the average rate rather than in a burst."""
        self.paused_until = max(self.paused_until, until)
        self._refill(now)
        self.tokens = 0.0
        self.updated = max(now, until)


def kind_of(integration: str) -> str:
    """``wecom/1`` (the second WeCom config of a receiver) → ``wecom``."""
    return integration.split("/", 1)[0]


class Gates:
    """One gate per (receiver, integration), created on first use."""

    def __init__(self, limits: dict[str, Limit] | None = None) -> None:
        self.limits = LIMITS if limits is None else limits
        self._gates: dict[tuple[str, str], Gate] = {}

    def get(self, receiver: str, integration: str) -> Gate:
        key = (receiver, integration)
        gate = self._gates.get(key)
        if gate is None:
            gate = self._gates[key] = Gate(self.limits.get(kind_of(integration)))
        return gate
