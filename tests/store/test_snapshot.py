from __future__ import annotations

import base64
import json
import struct
import zlib
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


def _first_format(doc: dict[str, object]) -> bytes:
    """A file as daemons before the binary arrays wrote it: one JSON document, zlib-packed, each
    series' times and values base64 in it (native float64, little-endian on every host we
    ship for)."""
    return snapshot.MAGIC_V1 + zlib.compress(json.dumps(doc).encode(), 3)


def _b64(values: list[float]) -> str:
    return base64.b64encode(struct.pack(f"<{len(values)}d", *values)).decode()


def test_a_snapshot_of_the_first_format_is_still_restored(tmp_path: Path) -> None:
    """An upgrade keeps its history: the previous format is read as before."""
    row = {"n": "temp", "l": [["gpu", "0"]], "k": "gauge", "c": False}
    doc = {
        "version": 1,
        "written_at": 990.0,
        "series": [{**row, "t": _b64([980.0, 990.0]), "v": _b64([50.0, 51.0])}],
        "checkpoints": {"engine": {"offset": 7}},
        "alerts": "[]",
    }
    path = tmp_path / "snapshot.bin"
    path.write_bytes(_first_format(doc))
    fresh = SeriesStore(FakeClock(1000.0))
    restored = snapshot.restore(path, fresh, 1000.0)
    assert restored.problem is None and restored.series == 1
    assert restored.checkpoints == {"engine": {"offset": 7}} and restored.alerts == "[]"
    temp = fresh.get("temp", make_labels({"gpu": "0"}))
    assert temp is not None
    assert list(temp.samples()[0])[:2] == [980.0, 990.0]
    assert list(temp.samples()[1])[:2] == [50.0, 51.0]


def test_the_arrays_are_little_endian_float64_byte_planes_after_the_header(tmp_path: Path) -> None:
    clock = FakeClock(100.0)
    st = SeriesStore(clock)
    st.set("g", (), 2.5)
    clock.advance(10)
    st.set("g", (), -1.0)
    raw = snapshot.dump(st, {}, clock.time())
    assert raw.startswith(snapshot.MAGIC)
    data = zlib.decompress(raw[len(snapshot.MAGIC) :])
    size = int.from_bytes(data[:8], "little")
    header = json.loads(data[8 : 8 + size])
    assert header["version"] == 2 and header["block"] == 1 << 20
    assert [(r["n"], r["s"]) for r in header["series"]] == [("g", 2)]
    planes = data[8 + size :]  # one block: byte 0 of the 4 numbers, then byte 1, ...
    raw = bytes(planes[i % 8 * 4 + i // 8] for i in range(32))
    assert struct.unpack("<4d", raw) == (100.0, 110.0, 2.5, -1.0)


def _packed(header: dict[str, object], arrays: bytes) -> bytes:
    text = json.dumps({"block": 8, **header}).encode()  # blocks of one number: as written
    return snapshot.MAGIC + zlib.compress(len(text).to_bytes(8, "little") + text + arrays)


def test_a_snapshot_whose_arrays_do_not_match_its_header_is_moved_aside(tmp_path: Path) -> None:
    row = {"n": "g", "l": [], "k": "gauge", "c": False, "s": 2}
    header = {"version": 2, "written_at": 0.0, "series": [row], "checkpoints": {}}
    path = tmp_path / "snapshot.bin"
    for arrays, said in (
        (struct.pack("<3d", 1.0, 2.0, 3.0), "24 bytes, 32 expected"),  # one number short
        (struct.pack("<5d", 1.0, 2.0, 3.0, 4.0, 5.0), "40 bytes, 32 expected"),
    ):
        path.write_bytes(_packed(header, arrays))
        store = SeriesStore(FakeClock())
        restored = snapshot.restore(path, store, 0.0)
        assert restored.problem is not None and said in restored.problem, restored.problem
        assert store.series_count() == 0 and not path.exists()
    path.write_bytes(snapshot.MAGIC + zlib.compress((10_000).to_bytes(8, "little") + b"{}"))
    restored = snapshot.restore(path, SeriesStore(FakeClock()), 0.0)
    assert restored.problem is not None and "header is truncated" in restored.problem
    text = json.dumps(header).encode()  # arrays of the right size, but no block size
    path.write_bytes(
        snapshot.MAGIC + zlib.compress(len(text).to_bytes(8, "little") + text + bytes(32))
    )
    restored = snapshot.restore(path, SeriesStore(FakeClock()), 0.0)
    assert restored.problem is not None and "no block size" in restored.problem
    bad = {**header, "series": [{**row, "s": -1}]}
    path.write_bytes(_packed(bad, b""))
    restored = snapshot.restore(path, SeriesStore(FakeClock()), 0.0)
    assert restored.problem is not None and "sample count" in restored.problem


def test_a_snapshot_whose_header_is_no_document_is_moved_aside(tmp_path: Path) -> None:
    path = tmp_path / "snapshot.bin"
    for raw in (
        snapshot.MAGIC + zlib.compress((2).to_bytes(8, "little") + b"[]"),
        snapshot.MAGIC_V1 + zlib.compress(b"[1, 2]"),
    ):
        path.write_bytes(raw)
        restored = snapshot.restore(path, SeriesStore(FakeClock()), 0.0)
        assert restored.problem is not None and "unknown snapshot version None" in restored.problem
