from __future__ import annotations

from pathlib import Path

from inferwatch.clock import FakeClock
from inferwatch.labels import make_labels
from inferwatch.store import snapshot
from inferwatch.store.counters import extrapolated_delta
from inferwatch.store.tsdb import SeriesStore


def test_round_trip_keeps_series_and_checkpoints(tmp_path: Path) -> None:
    clock = FakeClock(10_000.0)
    st = SeriesStore(clock)
    labels = make_labels({"gpu": "0"})
    for i in range(5):
        st.set("temp", labels, 50.0 + i)
        st.inc("events_total", make_labels({"type": "xid"}))
        clock.advance(10)
    st.mark_stale("temp", labels)
    path = tmp_path / "snapshot.bin"
    snapshot.write_atomic(path, snapshot.dump(st, {"engine": {"offset": 42}}, clock.time()))
    assert not (tmp_path / ".snapshot.bin.tmp").exists()

    fresh = SeriesStore(clock)
    restored = snapshot.restore(path, fresh, clock.time())
    assert restored.problem is None
    assert restored.series == 2
    assert restored.checkpoints == {"engine": {"offset": 42}}
    temp = fresh.get("temp", labels)
    assert temp is not None
    assert list(temp.samples()[1])[:5] == [50.0, 51.0, 52.0, 53.0, 54.0]
    assert fresh.current(temp) is None  # the staleness marker survived
    counter = fresh.get("events_total", make_labels({"type": "xid"}))
    assert counter is not None and counter.carry_forward
    assert fresh.inc("events_total", make_labels({"type": "xid"})) == 6.0


def test_rate_continues_across_a_restart(tmp_path: Path) -> None:
    """A counter's rate over a window spanning a restart is the same as without the restart."""
    clock = FakeClock(50_000.0)
    st = SeriesStore(clock)
    for _ in range(30):  # one event every 10 s, ticks every 10 s
        st.inc("faults_total", ())
        clock.advance(10)
        st.tick()
    path = tmp_path / "snapshot.bin"
    snapshot.write_atomic(path, snapshot.dump(st, {}, clock.time()))

    clock.advance(20)  # the daemon was down for 20 s
    st2 = SeriesStore(clock)
    snapshot.restore(path, st2, clock.time())
    for _ in range(30):
        st2.inc("faults_total", ())
        clock.advance(10)
        st2.tick()
    s = st2.get("faults_total", ())
    assert s is not None
    end = clock.time()
    ts, vs = s.window(end - 300, end)
    rate = extrapolated_delta(ts, vs, end - 300, end, is_counter=True, is_rate=True)
    assert rate is not None
    assert 0.09 < rate < 0.11  # ~1 event / 10 s, no reset, no drop to zero
    assert list(vs) == sorted(vs)  # monotonic: the restart did not reset the counter


def test_corrupt_snapshot_is_moved_aside(tmp_path: Path) -> None:
    path = tmp_path / "snapshot.bin"
    path.write_bytes(snapshot.MAGIC + b"garbage that is not zlib")
    st = SeriesStore(FakeClock())
    restored = snapshot.restore(path, st, 0.0)
    assert restored.problem is not None and "moved to" in restored.problem
    assert not path.exists()
    assert len(list(tmp_path.glob("snapshot.bin.corrupt-*"))) == 1
    assert st.series_count() == 0


def test_truncated_snapshot_is_moved_aside(tmp_path: Path) -> None:
    clock = FakeClock()
    st = SeriesStore(clock)
    st.set("g", (), 1.0)
    payload = snapshot.dump(st, {}, clock.time())
    path = tmp_path / "snapshot.bin"
    path.write_bytes(payload[: len(payload) // 2])
    restored = snapshot.restore(path, SeriesStore(clock), clock.time())
    assert restored.problem is not None


def test_missing_snapshot_is_a_fresh_start(tmp_path: Path) -> None:
    restored = snapshot.restore(tmp_path / "nope.bin", SeriesStore(FakeClock()), 0.0)
    assert restored.problem is None and restored.series == 0


def test_restore_applies_retention(tmp_path: Path) -> None:
    clock = FakeClock(0.0)
    st = SeriesStore(clock, retention_s=100)
    for _ in range(50):
        st.set("g", (), 1.0)
        clock.advance(10)
    path = tmp_path / "s.bin"
    snapshot.write_atomic(path, snapshot.dump(st, {}, clock.time()))
    fresh = SeriesStore(clock, retention_s=100)
    snapshot.restore(path, fresh, clock.time())
    s = fresh.get("g", ())
    assert s is not None and s.samples()[0][0] >= clock.time() - 100


def test_alert_state_travels_in_the_snapshot(tmp_path: Path) -> None:
    clock = FakeClock()
    path = tmp_path / "snapshot.bin"
    alerts = '{"version": 1, "saved_at": 1, "alerts": []}'
    snapshot.encode_and_write(path, snapshot.capture(SeriesStore(clock), {}, clock.time(), alerts))
    assert snapshot.restore(path, SeriesStore(clock), clock.time()).alerts == alerts
    snapshot.encode_and_write(path, snapshot.capture(SeriesStore(clock), {}, clock.time()))
    assert snapshot.restore(path, SeriesStore(clock), clock.time()).alerts is None  # older kind
