"""The durable outbox: every notification is a SQLite row before anything is sent.

Alertmanager keeps alerts in memory and snapshots its notification log every 15 minutes, so a
crash loses or repeats messages (notify.md §4.1). Here a row is committed (WAL, ``synchronous=
FULL``) before the send and marked after the answer, so a kill -9 at any point leaves either a
pending row (sent again: at-least-once at the transport, exactly-once for a receiver honouring
the idempotency key) or a sent row (never returned again). Rows of one group leave in order:
:meth:`Outbox.due` only offers the oldest pending row of each group.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from inferwatch.redact import redact
from inferwatch.store.sqlite import open_db

DEFAULT_MAX_AGE = 24 * 3600.0

SCHEMA = """
CREATE TABLE IF NOT EXISTS outbox (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    key TEXT NOT NULL UNIQUE,
    receiver TEXT NOT NULL,
    integration TEXT NOT NULL,
    group_key TEXT NOT NULL,
    payload TEXT NOT NULL,
    created_at REAL NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt_at REAL NOT NULL,
    last_error TEXT NOT NULL DEFAULT '',
    state TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'sent', 'dead'))
);
CREATE INDEX IF NOT EXISTS outbox_group
    ON outbox (state, receiver, integration, group_key, id);
"""

_COLUMNS = (
    "id, key, receiver, integration, group_key, payload, created_at, attempts, "
    "next_attempt_at, last_error, state"
)


class RowState(StrEnum):
    PENDING = "pending"
    SENT = "sent"
    DEAD = "dead"


def idempotency_key(
    receiver: str,
    integration: str,
    group_key: str,
    alert_states: Iterable[tuple[str, str]],
    sequence: int,
) -> str:
    """hash(receiver, integration, group key, sorted (fingerprint, state), sequence): the same
    transition enqueued twice (a retried evaluation, a restart) maps to the same row."""
    parts = [receiver, integration, group_key, str(sequence)]
    parts += [f"{fp}={state}" for fp, state in sorted(alert_states)]
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:32]


@dataclass(frozen=True, slots=True)
class OutboxRow:
    id: int
    key: str
    receiver: str
    integration: str
    group_key: str
    payload: dict[str, Any]
    created_at: float
    attempts: int
    next_attempt_at: float
    last_error: str
    state: RowState

    @classmethod
    def from_sql(cls, row: tuple[Any, ...]) -> OutboxRow:
        return cls(
            row[0], row[1], row[2], row[3], row[4], json.loads(row[5]),
            row[6], row[7], row[8], row[9], RowState(row[10]),
        )  # fmt: skip


class Outbox:
    """One SQLite file; every method is a single short transaction, safe from any thread."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._conn, self.problem = open_db(path, SCHEMA)
        # NORMAL survives kill -9 in WAL mode; FULL also survives a power cut after the commit.
        self._conn.execute("PRAGMA synchronous=FULL")
        self._lock = threading.Lock()

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def enqueue(
        self,
        *,
        key: str,
        receiver: str,
        integration: str,
        group_key: str,
        payload: Mapping[str, Any],
        now: float,
    ) -> tuple[OutboxRow, bool]:
        """Insert a pending row due at ``now``; an existing key is a no-op. Returns the row and
        whether it was created."""
        text = json.dumps(payload, sort_keys=True, separators=(",", ":"))
        with self._lock:
            cur = self._conn.execute(
                "INSERT OR IGNORE INTO outbox (key, receiver, integration, group_key, payload,"
                " created_at, next_attempt_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (key, receiver, integration, group_key, text, now, now),
            )
            row = self._get(key)
        assert row is not None  # inserted or already there, under the same lock
        return row, cur.rowcount == 1

    def get(self, key: str) -> OutboxRow | None:
        with self._lock:
            return self._get(key)

    def _get(self, key: str) -> OutboxRow | None:
        sql = f"SELECT {_COLUMNS} FROM outbox WHERE key = ?"  # noqa: S608 - constant columns
        row = self._conn.execute(sql, (key,)).fetchone()
        return None if row is None else OutboxRow.from_sql(row)

    def due(self, now: float, limit: int = 100) -> list[OutboxRow]:
        """The oldest pending row of each group, if it is due; a group whose head waits (in
        backoff) is blocked, so a later message never overtakes an earlier one."""
        with self._lock:
            rows = self._conn.execute(
                f"SELECT {_COLUMNS} FROM outbox o WHERE o.state = 'pending'"  # noqa: S608
                " AND o.next_attempt_at <= ? AND NOT EXISTS (SELECT 1 FROM outbox p"
                " WHERE p.state = 'pending' AND p.receiver = o.receiver"
                " AND p.integration = o.integration AND p.group_key = o.group_key"
                " AND p.id < o.id) ORDER BY o.id LIMIT ?",
                (now, limit),
            ).fetchall()
        return [OutboxRow.from_sql(r) for r in rows]

    def _finish(self, sql: str, args: tuple[Any, ...]) -> bool:
        with self._lock:
            return self._conn.execute(sql, args).rowcount == 1

    def mark_sent(self, row_id: int) -> bool:
        """Atomically pending → sent; False if the row was not pending (already sent or dead)."""
        return self._finish(
            "UPDATE outbox SET state = 'sent', attempts = attempts + 1, last_error = ''"
            " WHERE id = ? AND state = 'pending'",
            (row_id,),
        )

    def mark_failed(self, row_id: int, error: str, next_attempt_at: float) -> bool:
        """Count a failed attempt and schedule the next one; the error is stored redacted."""
        return self._finish(
            "UPDATE outbox SET attempts = attempts + 1, last_error = ?, next_attempt_at = ?"
            " WHERE id = ? AND state = 'pending'",
            (redact(error), next_attempt_at, row_id),
        )

    def mark_dead(self, row_id: int, error: str) -> bool:
        """Give up on a row (permanent failure or deadline): it leaves its group's queue."""
        return self._finish(
            "UPDATE outbox SET state = 'dead', attempts = attempts + 1, last_error = ?"
            " WHERE id = ? AND state = 'pending'",
            (redact(error), row_id),
        )

    def expire(self, now: float, max_age: float = DEFAULT_MAX_AGE) -> int:
        """Dead-letter pending rows older than ``max_age``; returns how many."""
        with self._lock:
            return self._conn.execute(
                "UPDATE outbox SET state = 'dead', last_error = last_error || ?"
                " WHERE state = 'pending' AND created_at < ?",
                (f" [expired after {max_age:.0f}s]", now - max_age),
            ).rowcount

    def pending_count(self) -> int:
        with self._lock:
            row = self._conn.execute("SELECT count(*) FROM outbox WHERE state = 'pending'")
            count: int = row.fetchone()[0]
        return count

    def oldest_pending_at(self) -> float | None:
        """Creation time of the oldest pending row, for the outbox-age gauge."""
        with self._lock:
            row = self._conn.execute("SELECT min(created_at) FROM outbox WHERE state = 'pending'")
            value: float | None = row.fetchone()[0]
        return value

    def purge(self, before: float) -> int:
        """Delete finished (sent or dead) rows created before ``before``; keeps the file small.
        A purged key can be enqueued (and sent) again, so ``before`` must lie beyond the time
        a caller may still re-enqueue the same transition."""
        with self._lock:
            return self._conn.execute(
                "DELETE FROM outbox WHERE state != 'pending' AND created_at < ?", (before,)
            ).rowcount
