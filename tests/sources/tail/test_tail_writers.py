"""Real writers in their own processes, real rotation (Python's handlers, Debian's logrotate), the
async driver with a real FileWatcher: rows 2, 3, 5 and 6 of the matrix under concurrency.

Every test waits on a condition with a 60 s bound, never on a fixed sleep. Rotations happen on a
timer while the writer writes (that is the point), and the end condition is "the writer's last
line and every line still on disk were delivered".
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import REPO, require_tool
from inferwatch.runtime.watch import FileWatcher
from inferwatch.sources.tail.follow import follow
from inferwatch.sources.tail.tailer import TailConfig, Tailer, TailLine

WRITER = Path(__file__).with_name("tail_writer_proc.py")
COUNT = 6000
END = "W-END"

pytestmark = pytest.mark.integration


def written() -> list[str]:
    return [f"W{seq:07d} " + "w" * (seq * 7 % 90) for seq in range(COUNT)] + [END]


def start_writer(mode: str, path: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, str(WRITER), mode, str(path), str(COUNT)],
        env={**os.environ, "PYTHONPATH": str(REPO / "daemon")},
    )


def on_disk(directory: Path) -> set[str]:
    """Every complete line still present in any file of the directory (NUL holes stripped).

    A copy taken while the writer was in the middle of a line ends with half of it: that half
    is not a line (the whole line is in the live file, where the tailer read it)."""
    found: set[str] = set()
    for path in directory.iterdir():
        if path.name.startswith("app.log"):
            for raw in path.read_bytes().split(b"\n")[:-1]:
                text = raw.lstrip(b"\x00").decode()
                if text.startswith("W"):
                    found.add(text)
    return found


async def run_rotating(
    path: Path,
    writer: subprocess.Popen[bytes],
    rotate: Callable[[], None] | None,
    *,
    complete: bool,
) -> list[TailLine]:
    """Follow ``path`` while the writer writes and ``rotate`` runs every 0.15 s; stop when the
    writer's last line and every line left on disk (all of them if ``complete``) arrived."""
    config = TailConfig(paths=(str(path),), rotate_grace=0.3, poll_interval=0.5)
    got: list[TailLine] = []
    texts: set[str] = set()

    async def rotator() -> None:
        while writer.poll() is None:
            await asyncio.sleep(0.15)
            if rotate is not None and writer.poll() is None:
                await asyncio.to_thread(rotate)

    async def consume(tailer: Tailer, watcher: FileWatcher) -> None:
        stream = follow(tailer, watcher=watcher)
        async with contextlib.aclosing(stream):
            async for batch in stream:
                got.extend(batch)
                texts.update(line.text for line in batch)
                tailer.ack(batch[-1].position)

    def finished() -> bool:
        if END not in texts or writer.poll() is None:
            return False
        return (set(written()) if complete else on_disk(path.parent)) <= texts

    async with FileWatcher() as watcher:
        with Tailer(config) as tailer:
            rotation = asyncio.create_task(rotator())
            consumer = asyncio.create_task(consume(tailer, watcher))
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 60
            while not finished():
                assert loop.time() < deadline, (
                    f"timed out: {len(texts)} of {COUNT + 1} lines, writer rc {writer.poll()}"
                )
                assert not consumer.done(), consumer.exception()
                await asyncio.sleep(0.05)
            consumer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await consumer
            await rotation
    assert writer.wait(10) == 0
    return got


def assert_no_duplicates(got: list[TailLine]) -> None:
    counts = Counter(line.text for line in got if not line.partial)
    duplicated = [text[:8] for text, n in counts.items() if n > 1]
    assert not duplicated, f"duplicated {len(duplicated)}: {duplicated[:5]}"
    assert set(counts) <= set(written()), "a line nobody wrote"
    assert not any("\x00" in line.text for line in got)
    # A copy taken in the middle of a line, whose end then fell into the copy→truncate window:
    # its head is all that is left, delivered once and marked partial.
    undelivered = set(written()) - set(counts)
    for line in got:
        if line.partial:
            assert any(text.startswith(line.text) for text in undelivered), line.text


def test_rotating_file_handler_in_another_process(tmp_path: Path) -> None:
    """Rows 2/3 live: RotatingFileHandler rotates by rename, often several times between polls."""
    path = tmp_path / "app.log"
    writer = start_writer("rotating", path)
    got = asyncio.run(run_rotating(path, writer, None, complete=True))
    assert [line.text for line in got] == written()  # exactly once and in order
    assert len(list(tmp_path.iterdir())) >= 15


def test_watched_file_handler_with_external_rename_rotation(tmp_path: Path) -> None:
    """Rename rotation by another party (logrotate's default ``create``), WatchedFileHandler
    reopening the path: the old file is drained through the held descriptor."""
    path = tmp_path / "app.log"
    writer = start_writer("watched", path)
    rotations = [0]

    def rotate() -> None:
        if path.exists():
            rotations[0] += 1
            path.rename(tmp_path / f"app.log.{rotations[0]}")

    got = asyncio.run(run_rotating(path, writer, rotate, complete=True))
    assert [line.text for line in got] == written()
    assert rotations[0] >= 3


def _logrotate(tmp_path: Path, mode: str) -> Callable[[], None]:
    sbin = Path("/usr/sbin/logrotate")  # not on every PATH
    tool = str(sbin) if os.access(sbin, os.X_OK) else require_tool("logrotate")
    conf = tmp_path / "logrotate.conf"
    conf.write_text(
        f"{tmp_path / 'app.log'} {{\n  rotate 1000\n  {mode}\n  missingok\n  nocompress\n}}\n"
    )
    state = tmp_path / "logrotate.state"

    def rotate() -> None:
        subprocess.run([tool, "-f", "-s", str(state), str(conf)], check=True, timeout=30)

    return rotate


def test_logrotate_create_with_a_reopening_writer(tmp_path: Path) -> None:
    """Real logrotate (``create``: rename, then a new empty file) under a writer that reopens."""
    path = tmp_path / "app.log"
    path.touch()
    rotate = _logrotate(tmp_path, "create")
    writer = start_writer("watched", path)
    got = asyncio.run(run_rotating(path, writer, rotate, complete=True))
    assert sorted(line.text for line in got) == sorted(written())
    assert_no_duplicates(got)


@pytest.mark.parametrize("mode", ["append", "pwrite"])
def test_logrotate_copytruncate(tmp_path: Path, mode: str) -> None:
    """Rows 5/6 live: real logrotate ``copytruncate``; the only lines that may be missing are the
    ones logrotate itself lost (written between its copy and its truncate: in no file now)."""
    path = tmp_path / "app.log"
    path.touch()
    rotate = _logrotate(tmp_path, "copytruncate")
    writer = start_writer(mode, path)
    got = asyncio.run(run_rotating(path, writer, rotate, complete=False))
    assert_no_duplicates(got)
    delivered = {line.text for line in got}
    assert on_disk(tmp_path) <= delivered
    lost = set(written()) - delivered
    assert len(lost) < COUNT // 10, f"{len(lost)} lines in copytruncate windows"
    assert len([p for p in tmp_path.iterdir() if p.name.startswith("app.log.")]) >= 3
