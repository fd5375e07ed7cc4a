"""The outbox on a disk that fills up and empties again, on a fake clock: rows the disk refuses
are delivered from memory, kept until space returns, then written; nothing is moved aside for a
full or read-only disk; a corrupt outbox is reported and what it still holds is salvaged."""

from __future__ import annotations

import asyncio
import errno
import sqlite3
from pathlib import Path

import pytest

from inferwatch.alerts.model import Alert, AlertState
from inferwatch.clock import FakeClock
from inferwatch.configfile import parse_config
from inferwatch.labels import make_labels
from inferwatch.notify.outbox import Outbox, RowState
from inferwatch.notify.service import MEMORY_PENDING, NotifyService
from inferwatch.store import sqlite as state_sqlite
from inferwatch.store.faults import WRITE_ERRORS, WRITE_FAILING
from inferwatch.store.sqlite import StateUnavailable
from inferwatch.store.tsdb import SeriesStore
from notify.test_backlog import T0, Recorder, alert, fire, run_ticks
from reliability.attack_table import AttackRow
from reliability.faultydb import FullDisk

CONFIG = (
    "route:\n  receiver: phone\n  group_by: [alertname, gpu]\n  group_wait: 0s\n"
    "  group_interval: 10s\n  repeat_interval: 12h\n"
    "outbox:\n  retry_initial: 1s\n  retry_max: 2s\n"
    "receivers:\n  - name: phone\n    webhook_configs: [{url: 'http://127.0.0.1:9/x'}]\n"
)


def make(tmp_path: Path, clock: FakeClock, phone: Recorder) -> tuple[NotifyService, FullDisk]:
    service = NotifyService(parse_config(CONFIG, "c.yaml"), SeriesStore(clock), clock, tmp_path)
    phone.clock = clock
    service.notifiers[("phone", "webhook")] = phone
    disk = FullDisk(service.outbox._conn)
    service.outbox._conn = disk  # type: ignore[assignment]
    return service, disk


def crit(gpu: str, at: float) -> Alert:
    return alert("GpuFallenOffBus", "critical", AlertState.FIRING, at, gpu=gpu)


def gauge(service: NotifyService, name: str, **labels: str) -> float:
    series = service.store.get(name, make_labels(labels))
    return series.vs[-1] if series is not None else 0.0


def on_disk(path: Path) -> list[tuple[str, str]]:
    with sqlite3.connect(path) as db:
        rows = db.execute("SELECT group_key, state FROM outbox ORDER BY id").fetchall()
    return [(str(g), str(s)) for g, s in rows]


def test_critical_alerts_on_a_full_disk_are_sent_from_memory(
    tmp_path: Path, attack: AttackRow
) -> None:
    attack.describe(
        "outbox refuses every write (disk full); 3 critical alerts fire",
        "all 3 sent from memory, the problem reported, cleared when space returns",
    )
    clock = FakeClock(T0)
    phone = Recorder()
    service, disk = make(tmp_path, clock, phone)
    disk.full = True
    for gpu in "012":
        fire(service, crit(gpu, clock.time()))
    run_ticks(service, clock, 3)
    attack.saw(f"{disk.refused} writes refused, {len(phone.got)} messages sent")
    assert disk.refused > 0
    assert sorted(a["labels"]["gpu"] for _, p, _ in phone.got for a in p["alerts"]) == [
        "0",
        "1",
        "2",
    ]
    assert service.status()["outbox_pending"] == 0
    problems = service.faults.problems()
    assert len(problems) == 1 and "full" in problems[0] and "outbox.db" in problems[0]
    assert gauge(service, WRITE_ERRORS, file="outbox.db") >= 1
    assert gauge(service, WRITE_FAILING, file="outbox.db") == 1.0
    disk.full = False
    run_ticks(service, clock, 1)
    assert service.faults.problems() == []
    assert gauge(service, WRITE_FAILING, file="outbox.db") == 0.0
    asyncio.run(service.close())


def test_rows_kept_in_memory_reach_the_disk_when_space_returns(
    tmp_path: Path, attack: AttackRow
) -> None:
    attack.describe(
        "disk full and receiver down, then space returns, then the receiver",
        "kept in memory, written to outbox.db when space returns, delivered once each",
    )
    clock = FakeClock(T0)
    phone = Recorder(down_until=T0 + 30)
    service, disk = make(tmp_path, clock, phone)
    disk.full = True
    fire(service, crit("0", clock.time()))
    fire(service, crit("1", clock.time()))
    run_ticks(service, clock, 10)
    assert phone.refused >= 2  # still tried while the disk is full
    status = service.status()
    assert status["outbox_pending"] == 2 and status["outbox_memory_pending"] == 2
    assert gauge(service, MEMORY_PENDING) == 2.0
    assert on_disk(service.outbox.path) == []
    disk.full = False  # space returns
    run_ticks(service, clock, 1)
    assert service.status()["outbox_memory_pending"] == 0
    assert [s for _, s in on_disk(service.outbox.path)] == ["pending", "pending"]
    assert service.faults.problems() == []
    run_ticks(service, clock, 30)  # the receiver is back: delivered from the file, once each
    attack.saw(f"{len(phone.got)} delivered, rows on disk {on_disk(service.outbox.path)}")
    assert sorted(a["labels"]["gpu"] for _, p, _ in phone.got for a in p["alerts"]) == ["0", "1"]
    assert [s for _, s in on_disk(service.outbox.path)] == ["sent", "sent"]
    asyncio.run(service.close())


def test_an_answer_the_disk_refuses_is_not_sent_twice(tmp_path: Path, attack: AttackRow) -> None:
    attack.describe(
        "the disk fills between a delivery and writing 'sent'", "not delivered a second time"
    )
    clock = FakeClock(T0)
    phone = Recorder(down_until=T0 + 5)
    service, disk = make(tmp_path, clock, phone)
    fire(service, crit("0", clock.time()))
    run_ticks(service, clock, 1)  # written to disk, the receiver is down
    assert on_disk(service.outbox.path) == [(on_disk(service.outbox.path)[0][0], "pending")]
    disk.full = True
    run_ticks(service, clock, 20)  # delivered; "sent" cannot be written
    assert len(phone.got) == 1
    assert service.outbox.deferred_count() >= 1
    assert service.status()["outbox_pending"] == 0
    disk.full = False
    run_ticks(service, clock, 5)
    attack.saw(f"{len(phone.got)} delivery")
    assert len(phone.got) == 1
    assert [s for _, s in on_disk(service.outbox.path)] == [RowState.SENT.value]
    assert service.outbox.deferred_count() == 0
    asyncio.run(service.close())


def test_a_failed_commit_does_not_wedge_the_outbox(tmp_path: Path, attack: AttackRow) -> None:
    attack.describe("a commit failing with 'disk is full'", "the next transaction works")
    outbox = Outbox(tmp_path / "outbox.db")
    disk = FullDisk(outbox._conn)
    outbox._conn = disk  # type: ignore[assignment]
    disk.full = True
    with pytest.raises(sqlite3.OperationalError, match="full"):
        outbox.enqueue(key="a", receiver="r", integration="i", group_key="g", payload={}, now=1)
    disk.full = False  # the next transaction starts (no "transaction within a transaction")
    _, created = outbox.enqueue(
        key="a", receiver="r", integration="i", group_key="g", payload={}, now=1
    )
    attack.saw(f"next enqueue created {created}, {outbox.pending_count()} pending")
    assert created and outbox.pending_count() == 1
    outbox.close()


@pytest.mark.parametrize(
    "fault",
    [
        sqlite3.OperationalError("database or disk is full"),
        sqlite3.OperationalError("attempt to write a readonly database"),
        OSError(errno.ENOSPC, "No space left on device"),
        OSError(errno.EROFS, "Read-only file system"),
    ],
    ids=["sqlite-full", "sqlite-readonly", "enospc", "erofs"],
)
def test_a_disk_fault_at_open_is_not_taken_for_corruption(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fault: Exception, attack: AttackRow
) -> None:
    attack.describe("opening outbox.db fails with a disk fault", "StateUnavailable, nothing moved")
    path = tmp_path / "outbox.db"
    Outbox(path).close()
    before = sorted(p.name for p in tmp_path.iterdir())

    def refuse(*_args: object) -> None:
        raise fault

    monkeypatch.setattr(state_sqlite, "_configure", refuse)
    with pytest.raises(StateUnavailable):
        Outbox(path)
    attack.saw(
        f"files {'unchanged' if sorted(p.name for p in tmp_path.iterdir()) == before else 'moved'}"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing moved aside


def test_an_unwritable_outbox_at_start_runs_in_memory_seeded_from_the_file(
    tmp_path: Path, attack: AttackRow
) -> None:
    attack.describe(
        "outbox.db with a pending message, read-only at start", "runs in memory, delivers it"
    )
    outbox = Outbox(tmp_path / "outbox.db")
    outbox.enqueue(key="a", receiver="phone", integration="webhook", group_key="g",
                   payload={"alerts": []}, now=T0)  # fmt: skip
    outbox.close()
    clock = FakeClock(T0)
    service = NotifyService(
        parse_config(CONFIG, "c.yaml"), SeriesStore(clock), clock, tmp_path, read_only=True
    )
    assert service.outbox.in_memory
    assert service.status()["outbox_memory_pending"] == 1
    phone = Recorder()
    phone.clock = clock
    service.notifiers[("phone", "webhook")] = phone
    run_ticks(service, clock, 2)
    attack.saw(f"in memory {service.outbox.in_memory}, {len(phone.got)} delivered")
    assert len(phone.got) == 1
    asyncio.run(service.close())


def corrupt_index(path: Path) -> None:
    """Overwrite the root page of the outbox's group index: quick_check fails, the table is
    still readable."""
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        (root,) = db.execute("SELECT rootpage FROM sqlite_master WHERE name = 'outbox_group'")
        page = int(db.execute("PRAGMA page_size").fetchone()[0])
    with path.open("r+b") as fh:
        fh.seek((int(root[0]) - 1) * page)
        fh.write(b"\xff" * page)


def test_a_corrupt_outbox_is_reported_and_its_rows_salvaged(
    tmp_path: Path, attack: AttackRow
) -> None:
    attack.describe(
        "outbox.db with a corrupt index page, 29 pending of 30",
        "reported in status, moved aside, the 29 pending salvaged",
    )
    path = tmp_path / "outbox.db"
    outbox = Outbox(path)
    for i in range(30):
        outbox.enqueue(key=f"k{i}", receiver="phone", integration="webhook", group_key=f"g{i}",
                       payload={"n": i, "pad": "x" * 300}, now=T0 + i)  # fmt: skip
    outbox.mark_sent(1)
    outbox.close()
    corrupt_index(path)
    clock = FakeClock(T0 + 60)
    service = NotifyService(parse_config(CONFIG, "c.yaml"), SeriesStore(clock), clock, tmp_path)
    (problem,) = service.problems()
    attack.saw(f"{problem[-50:]!r}; {service.status()['outbox_pending']} pending")
    assert "corrupt" in problem and "29 message(s) salvaged" in problem
    assert list(tmp_path.glob("outbox.db.corrupt-*"))
    assert service.status()["outbox_pending"] == 29
    assert service.outbox.get("k0") is not None and service.outbox.get("k0").state is RowState.SENT  # type: ignore[union-attr]
    asyncio.run(service.close())
