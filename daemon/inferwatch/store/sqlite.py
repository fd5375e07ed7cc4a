"""Opening SQLite state files: WAL mode, owner-only (0600), and a corrupt file moved aside
instead of crashing. A full or read-only file system is not corruption: :func:`open_db` raises
:class:`StateUnavailable` for it and never moves anything."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from inferwatch.logsetup import get_logger
from inferwatch.store.faults import fault_kind

log = get_logger(__name__)

FILE_MODE = 0o600


class StateUnavailable(Exception):
    """A state file cannot be opened for writing because its file system is full, read-only or
    failing; the caller keeps that state in memory instead."""

    def __init__(self, path: Path, kind: str, cause: BaseException) -> None:
        super().__init__(f"{path}: file system is {kind} ({cause})")
        self.path = path
        self.kind = kind


def move_aside(path: Path, why: str) -> Path:
    """Move a broken state file (and its WAL files) aside; return where it went."""
    stamp = time.strftime("%Y%m%dT%H%M%S")
    target = path.with_name(f"{path.name}.corrupt-{stamp}")
    for suffix in ("", "-wal", "-shm"):
        src = Path(f"{path}{suffix}")
        if src.exists():
            src.rename(Path(f"{target}{suffix}"))
    log.error(
        "state file was unreadable; moved aside", path=str(path), moved_to=str(target), why=why
    )
    return target


@dataclass(slots=True)
class Opened:
    conn: sqlite3.Connection
    problem: str | None = None
    moved_to: Path | None = None


def _private(path: Path) -> None:
    """Create ``path`` owner-only if missing (SQLite gives its -wal and -shm files the main
    file's mode) and take group/other access away from an existing one."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, FILE_MODE)
    try:
        if os.fstat(fd).st_mode & 0o077:
            os.fchmod(fd, FILE_MODE)
    finally:
        os.close(fd)
    for suffix in ("-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            extra = Path(f"{path}{suffix}")
            if extra.stat().st_mode & 0o077:
                extra.chmod(FILE_MODE)


def _configure(conn: sqlite3.Connection, schema: str) -> None:
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA busy_timeout=5000")
    row = conn.execute("PRAGMA quick_check").fetchone()
    if row is None or row[0] != "ok":
        raise sqlite3.DatabaseError(f"quick_check: {row[0] if row else 'no answer'}")
    conn.executescript(schema)


def open_memory(schema: str) -> sqlite3.Connection:
    """A private in-memory database with ``schema``: state kept while the disk cannot be."""
    conn = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
    conn.executescript(schema)
    return conn


def open_state_db(path: Path, schema: str) -> Opened:
    """Open (creating) a WAL database with ``schema``. A corrupt file is moved aside (the
    result says where); a full, read-only or failing file system raises
    :class:`StateUnavailable` and leaves every file where it is."""
    problem: str | None = None
    moved: Path | None = None
    for _attempt in range(2):
        conn: sqlite3.Connection | None = None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            _private(path)
            conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
            _configure(conn, schema)
            return Opened(conn, problem, moved)
        except (sqlite3.DatabaseError, OSError) as exc:
            if conn is not None:
                with contextlib.suppress(Exception):
                    conn.close()
            kind = fault_kind(exc)
            if kind is not None:
                raise StateUnavailable(path, kind, exc) from exc
            if isinstance(exc, OSError):
                raise
            moved = move_aside(path, str(exc))
            problem = f"{path} was corrupt ({exc}); moved to {moved}"
    raise RuntimeError(f"cannot open state database {path}")


def open_db(path: Path, schema: str) -> tuple[sqlite3.Connection, str | None]:
    """:func:`open_state_db` for callers that only need the connection and the problem."""
    opened = open_state_db(path, schema)
    return opened.conn, opened.problem


def read_rows(path: Path, sql: str) -> Iterator[tuple[object, ...]]:
    """Rows of ``sql`` from a (possibly damaged) database file, read-only, until the first
    unreadable page: what can still be salvaged. Nothing at all if it cannot be opened."""
    for uri in (f"file:{path}?mode=ro", f"file:{path}?immutable=1"):
        try:
            conn = sqlite3.connect(uri, uri=True, check_same_thread=False)
        except sqlite3.DatabaseError:
            continue
        try:
            cursor = conn.execute(sql)
            while True:
                try:
                    row = cursor.fetchone()
                except sqlite3.DatabaseError:
                    return
                if row is None:
                    return
                yield tuple(row)
        except sqlite3.DatabaseError:
            continue
        finally:
            conn.close()
