"""Opening SQLite state files: WAL mode, and a corrupt file moved aside instead of crashing."""

from __future__ import annotations

import contextlib
import sqlite3
import time
from pathlib import Path

from inferwatch.logsetup import get_logger

log = get_logger(__name__)


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


def open_db(path: Path, schema: str) -> tuple[sqlite3.Connection, str | None]:
    """Open (creating) a WAL database with ``schema``; returns the connection and, when the old
    file was corrupt, a message saying where it went."""
    path.parent.mkdir(parents=True, exist_ok=True)
    problem: str | None = None
    for _attempt in range(2):
        try:
            conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA busy_timeout=5000")
            row = conn.execute("PRAGMA quick_check").fetchone()
            if row is None or row[0] != "ok":
                raise sqlite3.DatabaseError(f"quick_check: {row[0] if row else 'no answer'}")
            conn.executescript(schema)
            return conn, problem
        except sqlite3.DatabaseError as exc:
            with contextlib.suppress(Exception):
                conn.close()
            moved = move_aside(path, str(exc))
            problem = f"{path} was corrupt ({exc}); moved to {moved}"
    raise RuntimeError(f"cannot open state database {path}")
