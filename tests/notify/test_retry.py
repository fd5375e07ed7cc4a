"""Outcome classification and backoff, with injected randomness and time; nothing sleeps."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from email.utils import formatdate
from pathlib import Path
from typing import Any

import httpx
import pytest

from inferwatch.clock import FakeClock
from inferwatch.notify.delivery import deliver_due
from inferwatch.notify.outbox import Outbox, RowState
from inferwatch.notify.retry import (
    Backoff,
    Outcome,
    OutcomeKind,
    RetryPolicy,
    body_retry_after,
    classify_exception,
    classify_http,
    parse_retry_after,
)


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (200, OutcomeKind.OK),
        (204, OutcomeKind.OK),
        (500, OutcomeKind.RETRY),
        (503, OutcomeKind.RETRY),
        (429, OutcomeKind.RETRY),
        (408, OutcomeKind.RETRY),
        (400, OutcomeKind.PERMANENT),
        (401, OutcomeKind.PERMANENT),
        (404, OutcomeKind.PERMANENT),
        (301, OutcomeKind.PERMANENT),
    ],
)
def test_classify_http(status: int, kind: OutcomeKind) -> None:
    assert classify_http(status).kind is kind


def test_retry_after_seconds_and_date() -> None:
    now = 1_700_000_000.0
    assert parse_retry_after("30", now) == 30.0
    assert parse_retry_after(formatdate(now + 120, usegmt=True), now) == pytest.approx(120.0)
    assert parse_retry_after(formatdate(now - 120, usegmt=True), now) == 0.0
    assert parse_retry_after("soon", now) is None
    assert parse_retry_after(None, now) is None


def test_header_hint_wins_over_body_and_body_hints_are_read() -> None:
    out = classify_http(429, b'{"retry_after": 5}', {"Retry-After": "7"})
    assert out.retry_after == 7.0
    assert classify_http(429, b'{"retry_after": 2.5}').retry_after == 2.5
    telegram = b'{"ok":false,"parameters":{"retry_after":11}}'
    assert classify_http(429, telegram).retry_after == 11.0
    assert body_retry_after(b"not json") is None
    assert body_retry_after(b'{"retry_after": true}') is None


def test_exceptions_retry_and_ambiguous_ones_are_flagged() -> None:
    req = httpx.Request("POST", "http://127.0.0.1:1/x?token=SECRETTOKEN")
    refused = classify_exception(httpx.ConnectError("refused", request=req))
    assert refused.kind is OutcomeKind.RETRY and not refused.maybe_delivered
    timeout = classify_exception(httpx.ReadTimeout("slow", request=req))
    assert timeout.kind is OutcomeKind.RETRY and timeout.maybe_delivered
    assert classify_exception(ValueError("bug")).kind is OutcomeKind.PERMANENT


def test_reason_is_redacted() -> None:
    out = Outcome.retry("failed http://h/x?token=SECRETTOKEN")
    assert "SECRETTOKEN" not in out.reason


def test_backoff_full_jitter_is_bounded_and_capped() -> None:
    b = Backoff(base=1.0, cap=300.0)
    assert b.delay(0, lambda: 1.0) == 1.0
    assert b.delay(3, lambda: 1.0) == 8.0
    assert b.delay(3, lambda: 0.5) == 4.0
    assert b.delay(50, lambda: 1.0) == 300.0
    assert b.delay(10_000, lambda: 0.0) == 0.0


def test_policy_schedules_until_the_deadline() -> None:
    clock = FakeClock()
    created = clock.time()
    policy = RetryPolicy(Backoff(1.0, 300.0), deadline=600.0, rand=lambda: 1.0)
    attempts = 0
    times = []
    while True:
        attempts += 1
        when = policy.next_attempt_at(Outcome.retry("HTTP 503"), attempts, created, clock.time())
        if when is None:
            break
        times.append(when - clock.time())
        clock.set(when)
    assert times[:5] == [1.0, 2.0, 4.0, 8.0, 16.0]
    assert max(times) <= 300.0
    assert clock.time() - created <= 600.0


def test_policy_honours_hint_and_never_retries_permanent_or_ok() -> None:
    policy = RetryPolicy(deadline=100.0, rand=lambda: 0.0)
    assert policy.next_attempt_at(Outcome.retry("429", after=42.0), 1, 0.0, 10.0) == 52.0
    assert policy.next_attempt_at(Outcome.retry("429", after=500.0), 1, 0.0, 10.0) is None
    assert policy.next_attempt_at(Outcome.permanent("HTTP 400"), 1, 0.0, 10.0) is None
    assert policy.next_attempt_at(Outcome.ok(), 1, 0.0, 10.0) is None


class Scripted:
    """A notifier answering with scripted outcomes (the last repeats)."""

    integration = "webhook"

    def __init__(self, *outcomes: Outcome | Exception) -> None:
        self.outcomes = list(outcomes)
        self.calls: list[tuple[dict[str, object], str | None]] = []

    async def notify(
        self, payload: Mapping[str, Any], idempotency_key: str | None = None
    ) -> Outcome:
        self.calls.append((dict(payload), idempotency_key))
        result = self.outcomes[min(len(self.calls), len(self.outcomes)) - 1]
        if isinstance(result, Exception):
            raise result
        return result

    async def aclose(self) -> None:
        return None


def test_deliver_due_records_every_outcome(tmp_path: Path) -> None:
    clock = FakeClock()
    box = Outbox(tmp_path / "outbox.db")
    ok, flaky, broken, buggy = (
        Scripted(Outcome.ok()),
        Scripted(Outcome.retry("HTTP 503"), Outcome.ok()),
        Scripted(Outcome.permanent("HTTP 400")),
        Scripted(RuntimeError("boom")),
    )
    notifiers = {("ok", "webhook"): ok, ("flaky", "webhook"): flaky,
                 ("broken", "webhook"): broken, ("buggy", "webhook"): buggy}  # fmt: skip
    policy = RetryPolicy(Backoff(10.0, 300.0), deadline=3600.0, rand=lambda: 1.0)

    def enqueue(seq: int) -> None:
        for receiver in ("ok", "flaky", "broken", "buggy", "orphan"):
            box.enqueue(key=f"{receiver}{seq}", receiver=receiver, integration="webhook",
                        group_key="g", payload={"seq": seq}, now=clock.time())  # fmt: skip

    async def rounds() -> None:
        enqueue(1)
        await deliver_due(box, notifiers, policy, clock.time())
        clock.advance(10)
        enqueue(2)  # flaky1 is due again now: flaky2 queued behind it is folded into it
        for _ in range(5):
            await deliver_due(box, notifiers, policy, clock.time())
            clock.advance(10)

    asyncio.run(rounds())
    assert [c[1] for c in ok.calls] == ["ok1", "ok2"]
    assert [c[0]["seq"] for c in flaky.calls] == [1, 2]  # one retry carrying both messages
    assert flaky.calls[1][1] == "flaky1+1"  # new content: a new idempotency key
    state = {k: box.get(k).state for k in ("broken1", "buggy1", "orphan1", "flaky1", "flaky2")}  # type: ignore[union-attr]
    assert state == {"broken1": RowState.DEAD, "buggy1": RowState.DEAD, "orphan1": RowState.DEAD,
                     "flaky1": RowState.SENT, "flaky2": RowState.MERGED}  # fmt: skip
    assert box.pending_count() == 0
    assert "boom" in box.get("buggy1").last_error  # type: ignore[union-attr]


def test_deliver_due_dead_letters_at_the_deadline(tmp_path: Path) -> None:
    clock = FakeClock()
    box = Outbox(tmp_path / "outbox.db")
    down = Scripted(Outcome.retry("HTTP 503"))
    box.enqueue(key="k", receiver="r", integration="webhook", group_key="g",
                payload={}, now=clock.time())  # fmt: skip
    policy = RetryPolicy(Backoff(1.0, 300.0), deadline=1800.0, rand=lambda: 1.0)

    async def until_dead() -> int:
        for n in range(100):
            await deliver_due(box, {("r", "webhook"): down}, policy, clock.time())
            if box.pending_count() == 0:
                return n
            clock.advance(300)
        raise AssertionError("never gave up")

    asyncio.run(until_dead())
    row = box.get("k")
    assert row is not None and row.state is RowState.DEAD
    assert clock.time() - row.created_at <= 1800.0 + 300
    assert len(down.calls) == row.attempts < 20  # backoff, not ~200 tries in minutes
