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
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from inferwatch.notify.outbox_schema import SCHEMA, migrate
from inferwatch.redact import redact
from inferwatch.store.sqlite import open_db

DEFAULT_MAX_AGE = 24 * 3600.0

_COLUMNS = (
    "id, key, receiver, integration, group_key, payload, created_at, attempts, "
    "next_attempt_at, last_error, state, merged"
)
_INSERT = (
    "INSERT OR IGNORE INTO outbox (key, receiver, integration, group_key, payload,"
    " created_at, next_attempt_at) VALUES (?, ?, ?, ?, ?, ?, ?)"
)


class RowState(StrEnum):
    PENDING = "pending"
    SENT = "sent"
    DEAD = "dead"
    MERGED = "merged"


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
    merged: int = 0

    @classmethod
    def from_sql(cls, row: tuple[Any, ...]) -> OutboxRow:
        return cls(
            row[0], row[1], row[2], row[3], row[4], json.loads(row[5]),
            row[6], row[7], row[8], row[9], RowState(row[10]), row[11],
        )  # fmt: skip

    @property
    def send_key(self) -> str:
        """The idempotency key a receiver sees: a merged message is new content, so it must not
        be taken for a retry of the row it grew from."""
        return self.key if not self.merged else f"{self.key}+{self.merged}"


@dataclass(frozen=True, slots=True)
class NewRow:
    """A row to insert; ``not_before`` holds it (quiet hours) until that time."""

    key: str
    receiver: str
    integration: str
    group_key: str
    payload: Mapping[str, Any]
    not_before: float = 0.0


Announce = Callable[[OutboxRow, str], Sequence[NewRow]]
"""Rows that tell someone a row was dead-lettered (the fallback receiver's message)."""


def _text(payload: Mapping[str, Any]) -> str:
    return json.dumps(payload, sort_keys=True, separators=(",", ":"))


class _Conflict(Exception):
    """A row changed under a merge; the transaction is rolled back."""


class Outbox:
    """One SQLite file; every method is a single short transaction, safe from any thread."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._conn, self.problem = open_db(path, SCHEMA)
        migrate(self._conn)
        # NORMAL survives kill -9 in WAL mode; FULL also survives a power cut after the commit.
        self._conn.execute("PRAGMA synchronous=FULL")
        self._lock = threading.Lock()

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        """One atomic change under the lock: everything inside commits together or not at all."""
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def _insert(self, row: NewRow, now: float) -> bool:
        args = (row.key, row.receiver, row.integration, row.group_key, _text(row.payload), now)
        cur = self._conn.execute(_INSERT, (*args, max(now, row.not_before)))
        return cur.rowcount == 1

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
        new = NewRow(key, receiver, integration, group_key, payload)
        with self._transaction():
            created = self._insert(new, now)
            row = self._get(key)
        assert row is not None  # inserted or already there, under the same lock
        return row, created

    def enqueue_batch(
        self, rows: Iterable[NewRow], now: float, state: tuple[str, str] | None = None
    ) -> int:
        """Insert rows (existing keys are no-ops) and save one named state value, in one
        transaction: the grouper's "announced" marks never run ahead of the rows announcing.
        Returns how many rows were created."""
        with self._transaction():
            created = sum(self._insert(r, now) for r in rows)
            if state is not None:
                self._conn.execute(
                    "INSERT OR REPLACE INTO notify_state (name, value) VALUES (?, ?)", state
                )
        return created

    def load_state(self, name: str) -> str | None:
        with self._lock:
            row = self._conn.execute("SELECT value FROM notify_state WHERE name = ?", (name,))
            found = row.fetchone()
        return None if found is None else str(found[0])

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

    def release(self, receiver: str, integration: str, now: float) -> int:
        """The channel answered: rows of it waiting in backoff are due now (the network is back;
        no need to wait out each row's own backoff). Held rows (never tried) keep their time."""
        return self._finish_count(
            "UPDATE outbox SET next_attempt_at = ? WHERE state = 'pending' AND receiver = ?"
            " AND integration = ? AND attempts > 0 AND next_attempt_at > ?",
            (now, receiver, integration, now),
        )

    def _finish_count(self, sql: str, args: tuple[Any, ...]) -> int:
        with self._lock:
            return self._conn.execute(sql, args).rowcount

    def mark_failed(self, row_id: int, error: str, next_attempt_at: float) -> bool:
        """Count a failed attempt and schedule the next one; the error is stored redacted."""
        return self._finish(
            "UPDATE outbox SET attempts = attempts + 1, last_error = ?, next_attempt_at = ?"
            " WHERE id = ? AND state = 'pending'",
            (redact(error), next_attempt_at, row_id),
        )

    def mark_dead(self, row: OutboxRow | int, error: str, announce: Announce | None = None) -> bool:
        """Give up on a row (permanent failure or deadline): it leaves its group's queue. The
        rows ``announce`` returns (the fallback receiver's message) commit with the change."""
        row_id = row if isinstance(row, int) else row.id
        with self._transaction():
            done = (
                self._conn.execute(
                    "UPDATE outbox SET state = 'dead', attempts = attempts + 1, last_error = ?"
                    " WHERE id = ? AND state = 'pending'",
                    (redact(error), row_id),
                ).rowcount
                == 1
            )
            if done and announce is not None and isinstance(row, OutboxRow):
                for new in announce(row, redact(error)):
                    self._insert(new, row.next_attempt_at)
        return done

    def expire(
        self, now: float, max_age: float = DEFAULT_MAX_AGE, announce: Announce | None = None
    ) -> int:
        """Dead-letter pending rows older than ``max_age``; returns how many."""
        note = f" [expired after {max_age:.0f}s]"
        with self._transaction():
            sql = f"SELECT {_COLUMNS} FROM outbox WHERE state = 'pending' AND created_at < ?"  # noqa: S608
            old = [OutboxRow.from_sql(r) for r in self._conn.execute(sql, (now - max_age,))]
            for row in old:
                self._conn.execute(
                    "UPDATE outbox SET state = 'dead', last_error = last_error || ? WHERE id = ?",
                    (note, row.id),
                )
                for new in announce(row, f"{row.last_error}{note}") if announce else ():
                    self._insert(new, now)
        return len(old)

    def backlog(self, head: OutboxRow, now: float) -> list[OutboxRow]:
        """``head`` and the pending rows of its group queued right behind it that are due too
        (a row held for quiet hours ends the run), in order."""
        with self._lock:
            rows = self._conn.execute(
                f"SELECT {_COLUMNS} FROM outbox WHERE state = 'pending' AND receiver = ?"  # noqa: S608
                " AND integration = ? AND group_key = ? AND id >= ? ORDER BY id",
                (head.receiver, head.integration, head.group_key, head.id),
            ).fetchall()
        out: list[OutboxRow] = []
        for raw in rows:
            row = OutboxRow.from_sql(raw)
            if row.id != head.id and row.next_attempt_at > now:
                break
            out.append(row)
        return out

    def merge(self, rows: Sequence[OutboxRow], payload: Mapping[str, Any]) -> OutboxRow | None:
        """Fold a group's backlog into its first row: that row (same id, so it keeps its place
        in the queue, and its oldest ``created_at``) now carries ``payload``; the others become
        ``merged``. None if any row stopped being pending meanwhile (nothing changes then)."""
        head, rest = rows[0], rows[1:]
        try:
            with self._transaction():
                changed = self._conn.execute(
                    "UPDATE outbox SET payload = ?, merged = merged + ? WHERE id = ?"
                    " AND state = 'pending'",
                    (_text(payload), sum(1 + r.merged for r in rest), head.id),
                ).rowcount
                for row in rest:
                    changed += self._conn.execute(
                        "UPDATE outbox SET state = 'merged', last_error = ? WHERE id = ?"
                        " AND state = 'pending'",
                        (f"merged into {head.id}", row.id),
                    ).rowcount
                if changed != len(rows):
                    raise _Conflict
                found = self._conn.execute(
                    f"SELECT {_COLUMNS} FROM outbox WHERE id = ?",  # noqa: S608
                    (head.id,),
                ).fetchone()
        except _Conflict:
            return None
        return OutboxRow.from_sql(found)

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
