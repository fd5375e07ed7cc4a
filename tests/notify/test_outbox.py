"""The durable outbox: idempotent enqueue, per-group order, marking, expiry, restart, kill -9."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import wait_until
from inferwatch.clock import FakeClock
from inferwatch.notify.outbox import Outbox, RowState, idempotency_key


def add(box: Outbox, key: str, group: str, now: float, receiver: str = "phone") -> int:
    row, _ = box.enqueue(
        key=key, receiver=receiver, integration="webhook", group_key=group,
        payload={"k": key}, now=now,
    )  # fmt: skip
    return row.id


def test_key_covers_every_part_and_ignores_alert_order() -> None:
    base = idempotency_key("r", "webhook", "g", [("a", "firing"), ("b", "resolved")], 1)
    assert base == idempotency_key("r", "webhook", "g", [("b", "resolved"), ("a", "firing")], 1)
    others = {
        idempotency_key("r2", "webhook", "g", [("a", "firing"), ("b", "resolved")], 1),
        idempotency_key("r", "wecom", "g", [("a", "firing"), ("b", "resolved")], 1),
        idempotency_key("r", "webhook", "g2", [("a", "firing"), ("b", "resolved")], 1),
        idempotency_key("r", "webhook", "g", [("a", "firing"), ("b", "firing")], 1),
        idempotency_key("r", "webhook", "g", [("a", "firing"), ("b", "resolved")], 2),
    }
    assert base not in others and len(others) == 5


def test_enqueue_is_idempotent(tmp_path: Path) -> None:
    box = Outbox(tmp_path / "outbox.db")
    first, created = box.enqueue(
        key="k1", receiver="r", integration="webhook", group_key="g", payload={"a": 1}, now=10.0
    )
    again, created_again = box.enqueue(
        key="k1", receiver="r", integration="webhook", group_key="g", payload={"a": 2}, now=20.0
    )
    assert created and not created_again
    assert again == first and again.payload == {"a": 1} and again.state is RowState.PENDING
    assert box.pending_count() == 1
    box.mark_sent(first.id)
    _, created_after_send = box.enqueue(
        key="k1", receiver="r", integration="webhook", group_key="g", payload={"a": 3}, now=30.0
    )
    assert not created_after_send and box.pending_count() == 0


def test_due_keeps_group_order_and_sent_rows_never_return(tmp_path: Path) -> None:
    clock = FakeClock()
    box = Outbox(tmp_path / "outbox.db")
    now = clock.time()
    a1, a2, b1 = add(box, "a1", "A", now), add(box, "a2", "A", now), add(box, "b1", "B", now)
    assert [r.id for r in box.due(now)] == [a1, b1]
    # a1 fails and backs off: a2 must wait behind it, B is not blocked.
    assert box.mark_failed(a1, "HTTP 503", now + 30)
    assert box.mark_sent(b1)
    assert box.due(now) == []
    clock.advance(30)
    (head,) = box.due(clock.time())
    assert head.id == a1 and head.attempts == 1 and head.last_error == "HTTP 503"
    assert box.mark_sent(a1)
    assert not box.mark_sent(a1)  # atomic: a second mark is refused
    assert [r.id for r in box.due(clock.time())] == [a2]
    assert box.mark_dead(a2, "HTTP 400")
    assert box.due(clock.time() + 3600) == [] and box.pending_count() == 0
    assert box.get("a2") is not None and box.get("a2").state is RowState.DEAD  # type: ignore[union-attr]


def test_errors_are_stored_redacted(tmp_path: Path) -> None:
    box = Outbox(tmp_path / "outbox.db")
    rid = add(box, "k", "g", 0.0)
    box.mark_failed(rid, "ConnectError http://h/send?key=CANARYSECRET1", 5.0)
    assert "CANARYSECRET1" not in box.due(5.0)[0].last_error


def test_expiry_dead_letters_old_rows_and_unblocks_the_group(tmp_path: Path) -> None:
    clock = FakeClock()
    box = Outbox(tmp_path / "outbox.db")
    old = add(box, "old", "g", clock.time())
    box.mark_failed(old, "HTTP 503", clock.time() + 10**6)
    clock.advance(3600)
    new = add(box, "new", "g", clock.time())
    assert box.due(clock.time()) == []
    assert box.oldest_pending_at() == clock.time() - 3600
    clock.advance(23 * 3600 + 1)
    assert box.expire(clock.time()) == 1
    assert "expired" in box.get("old").last_error  # type: ignore[union-attr]
    assert [r.id for r in box.due(clock.time())] == [new]
    assert box.purge(clock.time()) == 1 and box.get("old") is None


def test_rows_survive_restart_and_an_unmarked_row_is_retried(tmp_path: Path) -> None:
    path = tmp_path / "outbox.db"
    box = Outbox(path)
    sent, inflight = add(box, "s", "g1", 1.0), add(box, "f", "g2", 1.0)
    box.mark_sent(sent)
    # crash while "f" is being sent: it was never marked
    box.close()
    box = Outbox(path)
    assert [r.id for r in box.due(2.0)] == [inflight]
    assert box.pending_count() == 1
    box.close()


WORKER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from inferwatch.notify.outbox import Outbox
    box = Outbox(Path(sys.argv[1]))
    mode = sys.argv[2]
    i = 0
    while True:
        if mode == "enqueue":
            box.enqueue(key=f"k{i}", receiver="r", integration="webhook",
                        group_key=f"g{i % 7}", payload={"i": i, "pad": "x" * 500}, now=float(i))
        else:
            rows = box.due(1e12, limit=1)
            if not rows:
                print("done", flush=True)
                sys.stdin.read()
            box.mark_sent(rows[0].id)
            i = rows[0].id
        print(i, flush=True)
        i += 1
    """
)


def run_and_kill(path: Path, mode: str, at_least: int) -> int:
    """Run the worker until it has reported ``at_least`` commits, SIGKILL it, return the last
    reported (committed) value."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "daemon")}
    proc = subprocess.Popen(
        [sys.executable, "-c", WORKER, str(path), mode],
        stdout=subprocess.PIPE, stdin=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    assert proc.stdout is not None
    seen: list[str] = []

    def enough() -> bool:
        # the worker prints one line per commit, continuously, so a blocking read is short
        while len(seen) < at_least:
            line = proc.stdout.readline()  # type: ignore[union-attr]
            if line in ("", "done\n"):
                return True
            seen.append(line.strip())
        return True

    try:
        wait_until(enough, timeout=60, what=f"{mode} worker progress")
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        proc.stdout.close()
        proc.stdin.close()  # type: ignore[union-attr]
    assert proc.returncode == -signal.SIGKILL
    numbers = [int(s) for s in seen if s.isdigit()]
    assert numbers, seen
    return numbers[-1]


@pytest.mark.integration
def test_kill_minus_9_mid_enqueue_and_mid_mark(tmp_path: Path) -> None:
    path = tmp_path / "outbox.db"
    last = run_and_kill(path, "enqueue", 300)
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()
    box = Outbox(path)
    assert box.problem is None
    total = box.pending_count()
    assert total >= last + 1  # every acknowledged enqueue survived
    for i in range(last + 1):
        assert box.get(f"k{i}") is not None
    box.close()

    last_sent = run_and_kill(path, "mark", 100)
    box = Outbox(path)
    sent_row = box.get(f"k{last_sent - 1}")
    assert sent_row is not None and sent_row.state is RowState.SENT  # acknowledged mark survived
    remaining = box.pending_count()
    assert 0 < remaining <= total - 100
    # the rest drains in per-group order after the restart, nothing sent twice
    seen_ids: set[int] = set()
    while rows := box.due(1e12):
        for r in rows:
            assert r.id not in seen_ids
            seen_ids.add(r.id)
            assert box.mark_sent(r.id)
    assert box.pending_count() == 0 and len(seen_ids) == remaining
    box.close()
