"""A minimal file-source process for the crash test: tail, then commit lines + checkpoint together.

Usage: ``python tail_crash_worker.py DB PATTERN [SENTINEL]``. Every batch is acknowledged and
written to SQLite in one transaction with the tailer's checkpoint, exactly as the daemon commits
derived state with the source position, so a SIGKILL at any instant leaves a consistent store.
With SENTINEL, the process exits 0 once that line is committed (the final drain). SIGTERM
finishes the current batch and exits 0 (graceful restart).
"""

from __future__ import annotations

import json
import signal
import sqlite3
import sys
import time
from types import FrameType

from inferwatch.sources.tail.tailer import TailConfig, Tailer

stopping = False


def on_term(signum: int, frame: FrameType | None) -> None:
    global stopping
    stopping = True


def main() -> int:
    db_path, pattern = sys.argv[1], sys.argv[2]
    sentinel = sys.argv[3] if len(sys.argv) > 3 else None
    signal.signal(signal.SIGTERM, on_term)
    db = sqlite3.connect(db_path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("CREATE TABLE IF NOT EXISTS lines (text TEXT, path TEXT, line_no INTEGER)")
    db.execute("CREATE TABLE IF NOT EXISTS ckpt (id INTEGER PRIMARY KEY, data TEXT)")
    row = db.execute("SELECT data FROM ckpt WHERE id = 1").fetchone()
    config = TailConfig(paths=(pattern,), rotate_grace=0.2, poll_budget_bytes=16 * 1024)
    tailer = Tailer(config, checkpoint=json.loads(row[0]) if row else None)
    done = sentinel is not None and bool(
        db.execute("SELECT 1 FROM lines WHERE text = ?", (sentinel,)).fetchone()
    )
    while not stopping and not done:
        lines = tailer.poll()
        if lines:
            tailer.ack(lines[-1].position)
        if lines or row is None:
            state = json.dumps(tailer.checkpoint())
            db.execute("BEGIN IMMEDIATE")
            db.executemany(
                "INSERT INTO lines VALUES (?, ?, ?)",
                [(line.text, line.path, line.line_no) for line in lines],
            )
            db.execute("INSERT OR REPLACE INTO ckpt VALUES (1, ?)", (state,))
            db.execute("COMMIT")
            row = (state,)
            done = sentinel is not None and any(line.text == sentinel for line in lines)
        elif not tailer.more:
            time.sleep(0.01)
    tailer.close()
    db.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
