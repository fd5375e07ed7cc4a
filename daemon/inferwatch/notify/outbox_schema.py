"""The outbox's tables, and the one migration an older file needs.

Version 2 adds the ``merged`` state (a row folded into a later message of its group, which
carries all of its content) with a ``merged`` count on the surviving row, and a small key/value
table for the grouper's state, which is committed in the same transaction as the rows a flush
writes (so a restart neither re-pages nor forgets a pending resolve). SQLite cannot change a
CHECK constraint in place, so a version-1 table is copied into the new one inside one
transaction: a crash during the migration leaves the old file as it was.
"""

from __future__ import annotations

import sqlite3

VERSION = 2

OUTBOX_TABLE = """
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
    state TEXT NOT NULL DEFAULT 'pending'
        CHECK (state IN ('pending', 'sent', 'dead', 'merged')),
    merged INTEGER NOT NULL DEFAULT 0
);
"""

SCHEMA = (
    OUTBOX_TABLE
    + """
CREATE INDEX IF NOT EXISTS outbox_group
    ON outbox (state, receiver, integration, group_key, id);
CREATE TABLE IF NOT EXISTS notify_state (
    name TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
"""
)

_V1_COLUMNS = (
    "id, key, receiver, integration, group_key, payload, created_at, attempts, "
    "next_attempt_at, last_error, state"
)


def migrate(conn: sqlite3.Connection) -> None:
    """Bring a file opened in autocommit mode to :data:`VERSION`; idempotent."""
    if conn.execute("PRAGMA user_version").fetchone()[0] >= VERSION:
        return
    row = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'outbox'").fetchone()
    conn.execute("BEGIN IMMEDIATE")
    try:
        if row is not None and "'merged'" not in row[0]:
            conn.execute("ALTER TABLE outbox RENAME TO outbox_v1")
            conn.execute("DROP INDEX IF EXISTS outbox_group")
            conn.execute(OUTBOX_TABLE)
            conn.execute(
                f"INSERT INTO outbox ({_V1_COLUMNS}) SELECT {_V1_COLUMNS} FROM outbox_v1"  # noqa: S608
            )
            conn.execute("DROP TABLE outbox_v1")
        for statement in SCHEMA.split(";"):
            if statement.strip():
                conn.execute(statement)
        conn.execute(f"PRAGMA user_version = {VERSION}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
