"""The state dir is owner-only (0700, files 0600); a snapshot that would unpack beyond the cap
(a zlib bomb) is refused as corrupt: moved aside and reported, never fatal."""

from __future__ import annotations

import json
import os
import stat
import zlib
from pathlib import Path

import pytest

from inferwatch.clock import FakeClock
from inferwatch.notify.outbox import Outbox
from inferwatch.statedir import prepare_state_dir
from inferwatch.store import snapshot
from inferwatch.store.events import EventLog
from inferwatch.store.tsdb import SeriesStore
from reliability.attack_table import AttackRow


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture(autouse=True)
def usual_umask() -> object:
    old = os.umask(0o022)
    yield
    os.umask(old)


def test_state_dir_is_created_owner_only(tmp_path: Path, attack: AttackRow) -> None:
    attack.describe("a new state dir under umask 022", "0700")
    state = tmp_path / "a" / "state"
    prepare_state_dir(state)
    attack.saw(f"{mode(state):04o}")
    assert mode(state) == 0o700


def test_an_open_state_dir_is_closed(tmp_path: Path, attack: AttackRow) -> None:
    attack.describe("an existing 0755 state dir", "made 0700")
    state = tmp_path / "state"
    state.mkdir(mode=0o755)
    state.chmod(0o755)
    prepare_state_dir(state)
    attack.saw(f"{mode(state):04o}")
    assert mode(state) == 0o700


def test_sqlite_files_are_owner_only(tmp_path: Path, attack: AttackRow) -> None:
    attack.describe("events.db and outbox.db (+ WAL, SHM) created under umask 022", "all 0600")
    events = EventLog(tmp_path / "events.db")
    outbox = Outbox(tmp_path / "outbox.db")
    outbox.enqueue(key="k", receiver="r", integration="i", group_key="g", payload={}, now=1.0)
    files = sorted(tmp_path.glob("*.db*"))
    assert {p.name for p in files} >= {"events.db", "outbox.db", "outbox.db-wal", "outbox.db-shm"}
    attack.saw(", ".join(f"{p.name} {mode(p):04o}" for p in files))
    assert {p.name: mode(p) for p in files} == {p.name: 0o600 for p in files}
    events.close()
    outbox.close()


def test_existing_world_readable_files_are_closed(tmp_path: Path, attack: AttackRow) -> None:
    attack.describe("an existing 0644 events.db", "made 0600 when opened")
    EventLog(tmp_path / "events.db").close()
    (tmp_path / "events.db").chmod(0o644)
    EventLog(tmp_path / "events.db").close()
    attack.saw(f"{mode(tmp_path / 'events.db'):04o}")
    assert mode(tmp_path / "events.db") == 0o600


def test_snapshot_file_is_owner_only(tmp_path: Path, attack: AttackRow) -> None:
    attack.describe("snapshot.bin written under umask 022", "0600")
    clock = FakeClock()
    path = tmp_path / "snapshot.bin"
    snapshot.encode_and_write(path, snapshot.capture(SeriesStore(clock), {}, clock.time()))
    attack.saw(f"{mode(path):04o}")
    assert mode(path) == 0o600


def bomb(unpacked: int) -> bytes:
    """A valid snapshot header and JSON start, then ``unpacked`` bytes of spaces, zlib-packed."""
    z = zlib.compressobj(9)
    out = [snapshot.MAGIC, z.compress(b'{"version":1,"series":[],"checkpoints":{}')]
    chunk = b" " * (1 << 20)
    for _ in range(unpacked // len(chunk)):
        out.append(z.compress(chunk))
    out.append(z.compress(b"}") + z.flush())
    return b"".join(out)


def test_a_zlib_bomb_snapshot_is_refused_moved_aside_and_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, attack: AttackRow
) -> None:
    attack.describe(
        "a <200 KB snapshot.bin unpacking to 64 MB (cap scaled to 4 MB)",
        "decompression stops at the cap; moved aside and reported; starts empty",
    )
    assert snapshot.MAX_SNAPSHOT_BYTES == 512 << 20
    monkeypatch.setattr(snapshot, "MAX_SNAPSHOT_BYTES", 4 << 20)  # the same path, at test scale
    path = tmp_path / "snapshot.bin"
    path.write_bytes(bomb(64 << 20))
    assert path.stat().st_size < 200_000
    store = SeriesStore(FakeClock())
    restored = snapshot.restore(path, store, 0.0)
    attack.saw(f"{restored.problem!r}"[:60] + f"; {restored.series} series restored")
    assert restored.problem is not None and "unpacks to more than" in restored.problem
    assert restored.series == 0 and store.series_count() == 0
    assert not path.exists() and list(tmp_path.glob("snapshot.bin.corrupt-*"))


def test_a_snapshot_under_the_cap_still_restores(tmp_path: Path, attack: AttackRow) -> None:
    attack.describe("an ordinary snapshot", "restored with its checkpoints")
    clock = FakeClock()
    store = SeriesStore(clock)
    store.set("x", (), 1.0, clock.time())
    path = tmp_path / "snapshot.bin"
    snapshot.encode_and_write(path, snapshot.capture(store, {"k": {"pos": 1}}, clock.time()))
    fresh = SeriesStore(clock)
    restored = snapshot.restore(path, fresh, clock.time())
    attack.saw(f"problem {restored.problem}, {restored.series} series")
    assert restored.problem is None and restored.series == 1
    assert restored.checkpoints == {"k": {"pos": 1}}
    assert json.dumps(restored.checkpoints)
