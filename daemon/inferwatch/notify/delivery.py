"""One delivery round over the outbox: expire, merge backlogs, take tokens, send, record.

The order of things per round: rows past their deadline are dead-lettered (and announced through
the fallback receiver, in the same transaction); then the head of every group that is due is
looked at: if messages of that group queued up behind it are due too, they are folded into it
(one message, nothing dropped, the group's order kept); a head whose channel has no token or is
paused stays queued; the rest are sent concurrently and each outcome is committed right after its
answer. A provider's rate-limit hint pauses the whole channel; a success releases the channel's
other rows waiting in backoff (the receiver is back). A message that leaves more than
:data:`LATE_AFTER` seconds after it was queued says so, with the time it was queued.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from inferwatch.notify.channels.base import Notifier
from inferwatch.notify.merge import annotate, merge_payloads
from inferwatch.notify.outbox import Announce, Outbox, OutboxRow
from inferwatch.notify.ratelimit import Gates
from inferwatch.notify.retry import Outcome, OutcomeKind, RetryPolicy

LATE_AFTER = 60.0


def _ready(outbox: Outbox, gates: Gates, now: float) -> list[OutboxRow]:
    ready: list[OutboxRow] = []
    for head in outbox.due(now):
        backlog = outbox.backlog(head, now)
        row: OutboxRow | None = head
        if len(backlog) > 1:
            row = outbox.merge(backlog, merge_payloads([r.payload for r in backlog]))
        if row is not None and gates.get(row.receiver, row.integration).try_take(now):
            ready.append(row)
    return ready


async def deliver_due(
    outbox: Outbox,
    notifiers: Mapping[tuple[str, str], Notifier],
    policy: RetryPolicy,
    now: float,
    *,
    gates: Gates | None = None,
    announce: Announce | None = None,
) -> list[tuple[OutboxRow, Outcome]]:
    """Rows whose (receiver, integration) has no notifier are dead-lettered. Without ``gates``
    no channel is rate-limited."""
    gates = gates if gates is not None else Gates({})
    outbox.expire(now, policy.deadline, announce)

    async def one(row: OutboxRow) -> tuple[OutboxRow, Outcome]:
        notifier = notifiers.get((row.receiver, row.integration))
        queued = row.created_at if now - row.created_at >= LATE_AFTER else None
        payload = annotate(row.payload, queued, row.merged)
        if notifier is None:
            outcome = Outcome.permanent(f"no notifier {row.receiver}/{row.integration}")
        else:
            try:
                outcome = await notifier.notify(payload, idempotency_key=row.send_key)
            except Exception as exc:  # a channel bug must not stall the other groups
                outcome = Outcome.permanent(f"{row.integration}: {type(exc).__name__}: {exc}")
        if outcome.kind is OutcomeKind.OK:
            outbox.mark_sent(row.id)
            outbox.release(row.receiver, row.integration, now)
            return row, outcome
        if outcome.kind is OutcomeKind.RETRY and outcome.retry_after is not None:
            gates.get(row.receiver, row.integration).pause(now + outcome.retry_after, now)
        when = policy.next_attempt_at(outcome, row.attempts + 1, row.created_at, now)
        if when is None:
            outbox.mark_dead(row, outcome.reason, announce)
        else:
            outbox.mark_failed(row.id, outcome.reason, when)
        return row, outcome

    return list(await asyncio.gather(*(one(r) for r in _ready(outbox, gates, now))))
