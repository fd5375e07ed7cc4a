"""The event log: discrete happenings with their details, in SQLite (WAL), kept 14 days.

Inserts are idempotent on the event's key, so a record re-read after a crash is stored once.
Calls block briefly; the daemon runs them in its worker pool. :meth:`EventLog.memory` keeps the
log in memory instead (a read-only state dir); a write that fails (disk full) is rolled back.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from inferwatch.event import Event
from inferwatch.store.sqlite import open_db, open_memory

DEFAULT_EVENT_RETENTION_S = 14 * 86400.0

_SCHEMA = """
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    key TEXT NOT NULL UNIQUE,
    at REAL NOT NULL,
    type TEXT NOT NULL,
    source TEXT NOT NULL,
    line INTEGER,
    labels TEXT NOT NULL,
    details TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS events_at ON events(at);
CREATE INDEX IF NOT EXISTS events_type_at ON events(type, at);
"""


class EventLog:
    def __init__(
        self, path: Path, retention_s: float = DEFAULT_EVENT_RETENTION_S, *, memory: bool = False
    ) -> None:
        self.path = path
        self.retention_s = retention_s
        self.in_memory = memory
        self.recovered: str | None = None
        if memory:
            self._conn = open_memory(_SCHEMA)
        else:
            self._conn, self.recovered = open_db(path, _SCHEMA)
        self._lock = threading.Lock()

    @classmethod
    def memory(cls, path: Path, retention_s: float = DEFAULT_EVENT_RETENTION_S) -> EventLog:
        """The log kept in memory (``path`` only names where it would have been)."""
        return cls(path, retention_s, memory=True)

    def add(self, event: Event) -> bool:
        """Store ``event``; False if an event with its key is already there."""
        return self.add_many([event]) == 1

    def add_many(self, events: list[Event]) -> int:
        rows = [
            (
                e.key,
                e.at,
                e.type,
                e.source,
                e.line,
                json.dumps(dict(e.labels), sort_keys=True),
                json.dumps(dict(e.details), sort_keys=True, default=str),
            )
            for e in events
        ]
        with self._lock:
            before = self._conn.total_changes
            self._conn.execute("BEGIN")
            try:
                self._conn.executemany(
                    "INSERT OR IGNORE INTO events(key, at, type, source, line, labels, details)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?)",
                    rows,
                )
                self._conn.execute("COMMIT")
            except BaseException:
                if self._conn.in_transaction:  # a failed COMMIT (disk full) leaves it open
                    self._conn.execute("ROLLBACK")
                raise
            return self._conn.total_changes - before

    def query(
        self,
        *,
        since: float | None = None,
        until: float | None = None,
        types: list[str] | None = None,
        limit: int = 100,
    ) -> list[dict[str, Any]]:
        """Newest first."""
        where: list[str] = ["1=1"]
        args: list[float | str | int] = []
        if since is not None:
            where.append("at >= ?")
            args.append(since)
        if until is not None:
            where.append("at <= ?")
            args.append(until)
        if types:
            where.append(f"type IN ({','.join('?' * len(types))})")
            args.extend(types)
        # Only fixed fragments and "?" placeholders are joined into the statement.
        clause = " AND ".join(where)
        sql = f"SELECT id, key, at, type, source, line, labels, details FROM events WHERE {clause}"  # noqa: S608
        sql += " ORDER BY at DESC, id DESC LIMIT ?"
        args.append(max(1, min(limit, 10_000)))
        with self._lock:
            rows = self._conn.execute(sql, args).fetchall()
        return [
            {
                "id": r[0],
                "key": r[1],
                "at": r[2],
                "type": r[3],
                "source": r[4],
                "line": r[5],
                "labels": json.loads(r[6]),
                "details": json.loads(r[7]),
            }
            for r in rows
        ]

    def count(self) -> int:
        with self._lock:
            row = self._conn.execute("SELECT count(*) FROM events").fetchone()
        return int(row[0])

    def prune(self, now: float) -> int:
        with self._lock:
            cur = self._conn.execute("DELETE FROM events WHERE at < ?", (now - self.retention_s,))
            return cur.rowcount

    def close(self) -> None:
        with self._lock:
            self._conn.close()
