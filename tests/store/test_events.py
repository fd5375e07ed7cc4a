from __future__ import annotations

from pathlib import Path

from inferwatch.event import Event
from inferwatch.store.events import EventLog


def ev(key: str, at: float, kind: str = "xid") -> Event:
    return Event(
        type=kind,
        at=at,
        source="kernel",
        key=key,
        line=3,
        labels={"pci_bus_id": "0000:3b:00.0"},
        details={"xid": 79},
    )


def test_insert_is_idempotent_on_key(tmp_path: Path) -> None:
    log = EventLog(tmp_path / "events.db")
    assert log.add(ev("k1", 100.0))
    assert not log.add(ev("k1", 100.0))
    assert log.add_many([ev("k1", 100.0), ev("k2", 101.0)]) == 1
    assert log.count() == 2
    log.close()


def test_query_filters_and_orders_newest_first(tmp_path: Path) -> None:
    log = EventLog(tmp_path / "events.db")
    log.add_many([ev(f"k{i}", 100.0 + i, "xid" if i % 2 else "oom_kill") for i in range(10)])
    rows = log.query(types=["xid"], limit=3)
    assert [r["at"] for r in rows] == [109.0, 107.0, 105.0]
    assert rows[0]["details"] == {"xid": 79}
    assert rows[0]["labels"] == {"pci_bus_id": "0000:3b:00.0"}
    assert [r["at"] for r in log.query(since=108.0)] == [109.0, 108.0]
    log.close()


def test_prune_and_persistence(tmp_path: Path) -> None:
    path = tmp_path / "events.db"
    log = EventLog(path, retention_s=50)
    log.add_many([ev("old", 10.0), ev("new", 90.0)])
    assert log.prune(100.0) == 1
    log.close()
    again = EventLog(path)
    assert [r["key"] for r in again.query()] == ["new"]
    again.close()


def test_corrupt_database_is_moved_aside(tmp_path: Path) -> None:
    path = tmp_path / "events.db"
    path.write_bytes(b"this is not a sqlite database at all" * 100)
    log = EventLog(path)
    assert log.recovered is not None and "moved to" in log.recovered
    assert log.add(ev("k", 1.0))
    assert list(tmp_path.glob("events.db.corrupt-*"))
    log.close()
