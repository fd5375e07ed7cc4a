"""The durable outbox: every notification is a SQLite row before anything is sent.

Alertmanager keeps alerts in memory and snapshots its notification log every 15 minutes, so a
crash loses or repeats messages (notify.md §4.1). Here a row is committed (WAL, ``synchronous=
FULL``) before the send and marked after the answer, so a kill -9 at any point leaves either a
pending row (sent again: at-least-once at the transport, exactly-once for a receiver honouring
the idempotency key) or a sent row (never returned again). Rows of one group leave in order:
:meth:`Outbox.due` only offers the oldest pending row of each group.

A full or read-only disk is not allowed to lose a message: an insert that cannot be written
raises (the service keeps the rows in an in-memory outbox, :meth:`Outbox.memory`, delivers them
from there and moves them here with :meth:`Outbox.adopt` when space returns); an answer that
cannot be recorded is remembered in memory (the row is not offered again meanwhile) and written
by :meth:`Outbox.retry_deferred`. A corrupt file is moved aside and what SELECT can still read
of it is copied into the new one (:meth:`Outbox.salvage`).
"""

from __future__ import annotations

import hashlib
import json
import math
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from inferwatch.logsetup import get_logger
from inferwatch.notify.outbox_schema import SCHEMA, migrate
from inferwatch.redact import redact
from inferwatch.store.faults import is_disk_fault
from inferwatch.store.sqlite import open_memory, open_state_db, read_rows

log = get_logger(__name__)

DEFAULT_MAX_AGE = 24 * 3600.0

_COLUMNS = (
    "id, key, receiver, integration, group_key, payload, created_at, attempts, "
    "next_attempt_at, last_error, state, merged"
)
_V1_COLUMNS = (
    "id, key, receiver, integration, group_key, payload, created_at, attempts, "
    "next_attempt_at, last_error, state, 0"
)
_COPY = f"INSERT OR IGNORE INTO outbox ({_COLUMNS}) VALUES ({', '.join('?' * 12)})"  # noqa: S608
_ADOPT = (
    "INSERT OR IGNORE INTO outbox (key, receiver, integration, group_key, payload, created_at,"
    " attempts, next_attempt_at, last_error, merged) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
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


WriteHook = Callable[[BaseException | None], None]
"""Told the outcome of every write: None on success, the exception of a disk fault."""


class Outbox:
    """One SQLite file (or memory); every method is a single short transaction, safe from any
    thread. Opening a file on a full or read-only disk raises
    :class:`~inferwatch.store.sqlite.StateUnavailable`."""

    def __init__(
        self, path: Path, *, memory: bool = False, on_write: WriteHook | None = None
    ) -> None:
        self.path = path
        self.in_memory = memory
        self.problem: str | None = None
        self.salvaged = 0
        self.on_write = on_write
        self._lock = threading.Lock()
        # row id -> time before which it is not offered: an answer not yet written to disk
        self._held: dict[int, float] = {}
        self._deferred: list[tuple[str, tuple[Any, ...]]] = []
        if memory:
            self._conn = open_memory(SCHEMA)
            return
        opened = open_state_db(path, SCHEMA)
        self._conn = opened.conn
        migrate(self._conn)
        # NORMAL survives kill -9 in WAL mode; FULL also survives a power cut after the commit.
        self._conn.execute("PRAGMA synchronous=FULL")
        if opened.moved_to is not None:
            self.salvaged = self.salvage(opened.moved_to)
            self.problem = f"{opened.problem}; {self.salvaged} message(s) salvaged from it"
            log.error("outbox was corrupt", problem=self.problem, salvaged=self.salvaged)

    @classmethod
    def memory(cls, path: Path | None = None) -> Outbox:
        """An outbox that lives in memory: the rows a full or read-only disk cannot take."""
        return cls(path or Path(":memory:"), memory=True)

    def _report(self, exc: BaseException | None) -> None:
        if self.on_write is not None:
            self.on_write(exc)

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        """One atomic change under the lock: everything inside commits together or not at all
        (a COMMIT the disk refuses is rolled back too, so the next transaction can start)."""
        with self._lock:
            try:
                self._conn.execute("BEGIN IMMEDIATE")
                try:
                    yield
                    self._conn.execute("COMMIT")
                except BaseException:
                    if self._conn.in_transaction:
                        self._conn.execute("ROLLBACK")
                    raise
            except (sqlite3.Error, OSError) as exc:
                if is_disk_fault(exc):
                    self._report(exc)
                raise
        self._report(None)

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
        backoff) is blocked, so a later message never overtakes an earlier one. A row whose
        answer is not yet on disk waits as recorded in memory."""
        with self._lock:
            rows = self._conn.execute(
                f"SELECT {_COLUMNS} FROM outbox o WHERE o.state = 'pending'"  # noqa: S608
                " AND o.next_attempt_at <= ? AND NOT EXISTS (SELECT 1 FROM outbox p"
                " WHERE p.state = 'pending' AND p.receiver = o.receiver"
                " AND p.integration = o.integration AND p.group_key = o.group_key"
                " AND p.id < o.id) ORDER BY o.id LIMIT ?",
                (now, limit),
            ).fetchall()
            held = dict(self._held)
        return [OutboxRow.from_sql(r) for r in rows if held.get(r[0], -math.inf) <= now]

    def _finish(self, sql: str, args: tuple[Any, ...], row_id: int = 0, hold: float = 0) -> bool:
        """One UPDATE; if the disk refuses it, it is kept (and ``row_id`` held until ``hold``)
        to be written by :meth:`retry_deferred`."""
        return self._finish_count(sql, args, row_id, hold) == 1

    def _finish_count(
        self, sql: str, args: tuple[Any, ...], row_id: int = 0, hold: float = 0
    ) -> int:
        with self._lock:
            try:
                count = int(self._conn.execute(sql, args).rowcount)
            except (sqlite3.Error, OSError) as exc:
                if not is_disk_fault(exc):
                    raise
                if row_id:
                    self._deferred.append((sql, args))
                    self._held[row_id] = hold
                fault: BaseException | None = exc
                count = 1 if row_id else 0
            else:
                fault = None
        self._report(fault)
        return count

    def retry_deferred(self) -> int:
        """Write the answers the disk refused before, in one transaction; how many. A disk
        fault leaves them waiting (and raises)."""
        with self._lock:
            work = list(self._deferred)
        if not work:
            return 0
        with self._transaction():
            for sql, args in work:
                self._conn.execute(sql, args)
        with self._lock:
            del self._deferred[: len(work)]
            if not self._deferred:
                self._held.clear()
        return len(work)

    def deferred_count(self) -> int:
        with self._lock:
            return len(self._deferred)

    def mark_sent(self, row_id: int) -> bool:
        """Atomically pending → sent; False if the row was not pending (already sent or dead)."""
        return self._finish(
            "UPDATE outbox SET state = 'sent', attempts = attempts + 1, last_error = ''"
            " WHERE id = ? AND state = 'pending'",
            (row_id,),
            row_id,
            math.inf,
        )

    def release(self, receiver: str, integration: str, now: float) -> int:
        """The channel answered: rows of it waiting in backoff are due now (the network is back;
        no need to wait out each row's own backoff). Held rows (never tried) keep their time."""
        return self._finish_count(
            "UPDATE outbox SET next_attempt_at = ? WHERE state = 'pending' AND receiver = ?"
            " AND integration = ? AND attempts > 0 AND next_attempt_at > ?",
            (now, receiver, integration, now),
        )

    def mark_failed(self, row_id: int, error: str, next_attempt_at: float) -> bool:
        """Count a failed attempt and schedule the next one; the error is stored redacted."""
        return self._finish(
            "UPDATE outbox SET attempts = attempts + 1, last_error = ?, next_attempt_at = ?"
            " WHERE id = ? AND state = 'pending'",
            (redact(error), next_attempt_at, row_id),
            row_id,
            next_attempt_at,
        )

    def mark_dead(self, row: OutboxRow | int, error: str, announce: Announce | None = None) -> bool:
        """Give up on a row (permanent failure or deadline): it leaves its group's queue. The
        rows ``announce`` returns (the fallback receiver's message) commit with the change."""
        row_id = row if isinstance(row, int) else row.id
        sql = (
            "UPDATE outbox SET state = 'dead', attempts = attempts + 1, last_error = ?"
            " WHERE id = ? AND state = 'pending'"
        )
        try:
            with self._transaction():
                done = self._conn.execute(sql, (redact(error), row_id)).rowcount == 1
                if done and announce is not None and isinstance(row, OutboxRow):
                    for new in announce(row, redact(error)):
                        self._insert(new, row.next_attempt_at)
        except (sqlite3.Error, OSError) as exc:
            if not is_disk_fault(exc):
                raise
            log.error("dead letter not announced: the outbox cannot be written", row=row_id)
            return self._finish(sql, (redact(error), row_id), row_id, math.inf)
        return done

    def expire(
        self, now: float, max_age: float = DEFAULT_MAX_AGE, announce: Announce | None = None
    ) -> int:
        """Dead-letter pending rows older than ``max_age``; returns how many."""
        note = f" [expired after {max_age:.0f}s]"
        try:
            return self._expire(now, max_age, note, announce)
        except (sqlite3.Error, OSError) as exc:
            if not is_disk_fault(exc):
                raise
            return 0  # tried again next round

    def _expire(self, now: float, max_age: float, note: str, announce: Announce | None) -> int:
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
            held = dict(self._held)
        out: list[OutboxRow] = []
        for raw in rows:
            row = OutboxRow.from_sql(raw)
            waits = max(row.next_attempt_at, held.get(row.id, -math.inf))
            if row.id != head.id and waits > now:
                break
            out.append(row)
        return out

    def merge(self, rows: Sequence[OutboxRow], payload: Mapping[str, Any]) -> OutboxRow | None:
        """Fold a group's backlog into its first row: that row (same id, so it keeps its place
        in the queue, and its oldest ``created_at``) now carries ``payload``; the others become
        ``merged``. None if any row stopped being pending meanwhile (nothing changes then); the
        head alone, unchanged, if the disk refuses the change."""
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
        except (sqlite3.Error, OSError) as exc:
            if not is_disk_fault(exc):
                raise
            return head
        return OutboxRow.from_sql(found)

    def pending_count(self) -> int:
        """Pending rows, less those sent or dead whose answer waits in memory for the disk."""
        with self._lock:
            row = self._conn.execute("SELECT count(*) FROM outbox WHERE state = 'pending'")
            count: int = row.fetchone()[0]
            finished = sum(1 for until in self._held.values() if until == math.inf)
        return max(0, count - finished)

    def pending_rows(self) -> list[OutboxRow]:
        """Every pending row, in order (to move them into another outbox)."""
        with self._lock:
            rows = self._conn.execute(
                f"SELECT {_COLUMNS} FROM outbox WHERE state = 'pending' ORDER BY id"  # noqa: S608
            ).fetchall()
        return [OutboxRow.from_sql(r) for r in rows]

    def adopt(self, rows: Sequence[OutboxRow], state: tuple[str, str] | None = None) -> int:
        """Insert rows taken from another outbox (attempts, times and errors kept; existing keys
        are no-ops) and one state value, in one transaction; how many were created."""
        with self._transaction():
            created = 0
            for r in rows:
                args = (r.key, r.receiver, r.integration, r.group_key, _text(r.payload))
                more = (r.created_at, r.attempts, r.next_attempt_at, r.last_error, r.merged)
                created += self._conn.execute(_ADOPT, (*args, *more)).rowcount
            if state is not None:
                self._conn.execute(
                    "INSERT OR REPLACE INTO notify_state (name, value) VALUES (?, ?)", state
                )
        return created

    def forget(self, ids: Iterable[int]) -> None:
        """Delete rows (moved into another outbox)."""
        with self._lock:
            self._conn.executemany("DELETE FROM outbox WHERE id = ?", [(i,) for i in ids])

    def salvage(self, source: Path) -> int:
        """Copy what SELECT can still read of a damaged outbox file (rows, in order, with their
        ids and states; the grouper's state) into this one; how many pending rows came back."""
        rows = list(read_rows(source, f"SELECT {_COLUMNS} FROM outbox ORDER BY id"))  # noqa: S608
        if not rows:
            rows = list(read_rows(source, f"SELECT {_V1_COLUMNS} FROM outbox ORDER BY id"))  # noqa: S608
        states = list(read_rows(source, "SELECT name, value FROM notify_state"))
        with self._transaction():
            self._conn.executemany(_COPY, rows)
            self._conn.executemany(
                "INSERT OR REPLACE INTO notify_state (name, value) VALUES (?, ?)", states
            )
        return sum(1 for r in rows if r[10] == RowState.PENDING.value)

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
        return self._finish_count(
            "DELETE FROM outbox WHERE state != 'pending' AND created_at < ?", (before,)
        )
