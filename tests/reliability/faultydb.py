"""A SQLite connection whose disk can be made full: every write then fails as SQLite's does."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from typing import Any

_READS = ("SELECT", "PRAGMA")


class FullDisk:
    """Wraps a connection; while ``full`` is set, any statement that writes raises
    ``sqlite3.OperationalError("database or disk is full")`` (after BEGIN: at COMMIT, as a
    real full disk does when the WAL cannot grow)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.full = False
        self.refused = 0

    def _refuse(self) -> None:
        self.refused += 1
        raise sqlite3.OperationalError("database or disk is full")

    def execute(self, sql: str, args: Iterable[Any] = ()) -> sqlite3.Cursor:
        verb = sql.lstrip().split(None, 1)[0].upper()
        if self.full and verb not in _READS and verb not in ("BEGIN", "ROLLBACK"):
            self._refuse()
        return self.conn.execute(sql, tuple(args))

    def executemany(self, sql: str, rows: Iterable[Iterable[Any]]) -> sqlite3.Cursor:
        if self.full:
            self._refuse()
        return self.conn.executemany(sql, rows)

    @property
    def in_transaction(self) -> bool:
        return self.conn.in_transaction

    @property
    def total_changes(self) -> int:
        return self.conn.total_changes

    def close(self) -> None:
        self.conn.close()
