"""The tailer core against real files and real writers, driven by a fake clock (never sleeps).

Rows of the reliability matrix in reference/tailing.md §9 are named in each test's docstring.
Restarts and checkpoints are in test_tail_restart.py, rotation by real tools and concurrent
writers in test_tail_writers.py, SIGKILL in test_tail_crash.py.
"""

from __future__ import annotations

import logging
import logging.handlers
import os
import random
import shutil
import tracemalloc
from pathlib import Path

import pytest

from inferwatch.sources.tail import files as tail_files
from sources.tail.tail_harness import AppendWriter, Harness, PwriteWriter, encode, numbered


def test_steady_appends_in_random_chunks_split_lines(tmp_path: Path) -> None:
    """Row 1: 10k lines written in random-sized chunks, a poll between chunks: L=0, D=0."""
    h = Harness(tmp_path)
    lines = numbered("L", 10_000)
    data = encode(lines)
    rng = random.Random(1)
    writer = AppendWriter(h.path)
    pos = 0
    while pos < len(data):
        step = rng.randint(1, 700)
        writer.write(data[pos : pos + step])
        pos += step
        h.tick()
    writer.close()
    assert h.texts() == lines
    assert [line.line_no for line in h.delivered] == list(range(1, 10_001))
    assert h.delivered[-1].position[1] == len(data)


@pytest.mark.parametrize("strict", [False, True])
def test_rename_rotation_while_old_writer_keeps_writing(tmp_path: Path, strict: bool) -> None:
    """Row 2: rename log→log.1, the old fd gets 100 more lines over 3 s, a new file fills too."""
    h = Harness(tmp_path, rotate_grace=2.0, strict_rotation_order=strict)
    old = AppendWriter(h.path)
    a, b, c = numbered("A", 50), numbered("B", 100), numbered("C", 60)
    old.lines(a)
    h.tick()
    os.rename(h.path, h.path + ".1")
    new = AppendWriter(h.path)
    for i in range(10):
        old.lines(b[i * 10 : (i + 1) * 10])
        new.lines(c[i * 6 : (i + 1) * 6])
        h.tick(advance=0.3)
    old.close()
    new.close()
    h.settle()
    h.assert_exactly(a + b + c)
    assert h.texts_of("A") + h.texts_of("B") == a + b  # the old file, in file order
    assert h.texts_of("C") == c
    if strict:
        assert h.texts() == a + b + c  # the new file waits until the old one is closed
    old_lines = [line for line in h.delivered if line.text[0] in "AB"]
    assert [line.line_no for line in old_lines] == list(range(1, 151))
    assert h.tailer.stats.rotations == 1
    assert h.tailer.stats.files_closed == 1


def test_three_rotations_between_two_polls(tmp_path: Path) -> None:
    """Row 3: RotatingFileHandler(maxBytes=200, backupCount=5) rotates 3x with no poll between."""
    h = Harness(tmp_path)
    handler = logging.handlers.RotatingFileHandler(h.path, maxBytes=200, backupCount=5)
    handler.setFormatter(logging.Formatter("%(message)s"))
    logger = logging.getLogger(f"tail-row3-{id(h)}")
    logger.propagate = False
    logger.addHandler(handler)
    first = numbered("F", 3, width=60)
    for text in first:
        logger.warning(text)
    h.tick()
    burst = numbered("R", 9, width=60)  # 3 lines per file: the 1st, 4th and 7th rotate
    for text in burst:
        logger.warning(text)
    handler.close()
    assert os.path.exists(h.path + ".3") and not os.path.exists(h.path + ".4")
    h.tick()
    assert h.texts() == first + burst
    assert h.tailer.stats.intermediates_read == 2
    h.settle()
    assert h.texts() == first + burst


def test_rotated_file_deleted_before_fully_read(tmp_path: Path) -> None:
    """Row 4: acks blocked, rotate, unlink .1: lines still come from the held fd; then closed."""
    h = Harness(tmp_path, poll_budget_bytes=1024)
    lines = numbered("D", 200)
    writer = AppendWriter(h.path)
    writer.lines(lines)
    writer.close()
    h.acks = False
    h.tick()
    assert 0 < len(h.delivered) < 200
    os.rename(h.path, h.path + ".1")
    os.unlink(h.path + ".1")
    for _ in range(40):
        h.tick(advance=10)
    assert h.texts() == lines
    assert h.tailer.stats.files_closed == 0  # held until acknowledged
    h.acks = True
    h.ack_all()
    h.tick(advance=10)
    assert h.tailer.stats.files_closed == 1
    assert h.tailer.checkpoint()["files"] == []
    assert h.tailer.stats.bytes_unread_dropped == 0


def _copytruncate(path: str) -> None:
    shutil.copyfile(path, path + ".1")
    os.truncate(path, 0)


def test_copytruncate_reads_the_rest_from_the_copy(tmp_path: Path) -> None:
    """Row 5: behind when logrotate copies and truncates: the unread lines come from .1."""
    h = Harness(tmp_path)
    writer = AppendWriter(h.path)
    a, b, c = numbered("A", 50), numbered("B", 30), numbered("C", 20)
    writer.lines(a)
    h.tick()
    writer.lines(b)  # not read yet
    _copytruncate(h.path)
    writer.lines(c)
    h.tick()
    assert h.texts() == a + b + c
    assert h.tailer.stats.copies_read == 1
    assert [line.line_no for line in h.delivered] == [*range(1, 81), *range(1, 21)]
    h.settle()
    h.assert_exactly(a + b + c)


@pytest.mark.parametrize("poll_in_window", [False, True])
def test_copytruncate_window(tmp_path: Path, poll_in_window: bool) -> None:
    """Row 5: lines written between copy and truncate are lost only if nobody read them."""
    h = Harness(tmp_path)
    writer = AppendWriter(h.path)
    a, window, c = numbered("A", 50), numbered("W", 5), numbered("C", 20)
    writer.lines(a)
    h.tick()
    shutil.copyfile(h.path, h.path + ".1")
    writer.lines(window)
    if poll_in_window:
        h.tick()
    os.truncate(h.path, 0)
    writer.lines(c)
    h.settle()
    h.assert_exactly(a + window + c if poll_in_window else a + c)


@pytest.mark.parametrize("with_copy", [True, False])
def test_copytruncate_with_a_non_append_writer_skips_the_nul_hole(
    tmp_path: Path, with_copy: bool
) -> None:
    """Row 6: after the truncate the writer pwrites at its old offset: a sparse NUL hole."""
    h = Harness(tmp_path)
    writer = PwriteWriter(h.path)
    a, b = numbered("A", 50), numbered("B", 40)
    writer.lines(a)
    h.tick()
    if with_copy:
        shutil.copyfile(h.path, h.path + ".1")
    os.truncate(h.path, 0)
    writer.lines(b)
    writer.close()
    assert Path(h.path).read_bytes().startswith(b"\x00" * 100)
    h.settle()
    assert not any("\x00" in text for text in h.texts())
    h.assert_exactly(a + b)
    assert h.tailer.stats.nul_bytes_skipped == len(encode(a))


def test_truncate_then_regrow_past_old_offset_before_next_poll(tmp_path: Path) -> None:
    """Row 7: the size never looks smaller; the anchor catches it within one poll."""
    h = Harness(tmp_path)
    writer = AppendWriter(h.path)
    a, b = numbered("A", 20), numbered("B", 50)
    writer.lines(a)
    h.tick()
    os.truncate(h.path, 0)
    writer.lines(b)
    assert os.path.getsize(h.path) > len(encode(a))
    h.tick()
    assert h.texts() == a + b
    assert h.tailer.stats.truncations == 1


def test_truncate_and_rewrite_identical_first_line(tmp_path: Path) -> None:
    """Row 8: same banner after a truncate: the anchor, not the prefix, tells."""
    h = Harness(tmp_path)
    writer = AppendWriter(h.path)
    banner = "engine v1.2.3 starting, config=/etc/engine.yaml"
    a, b = numbered("A", 10), numbered("B", 30)
    writer.lines([banner, *a])
    h.tick()
    os.truncate(h.path, 0)
    writer.lines([banner, *b])
    h.tick()
    assert h.texts() == [banner, *a, banner, *b]


def test_shrink_to_n_bytes_is_a_rewrite_with_bounded_duplicates(tmp_path: Path) -> None:
    """Row 9: os.truncate(p, 100) then appends: re-read from 0, duplicates ≤ 100 bytes."""
    h = Harness(tmp_path)
    writer = AppendWriter(h.path)
    a, b = numbered("A", 20, width=19), numbered("B", 10, width=19)  # 20 bytes a line
    writer.lines(a)
    h.tick()
    os.truncate(h.path, 100)
    writer.lines(b)
    h.tick()
    assert h.texts() == a + a[:5] + b
    duplicated = sum(line.raw_len + 1 for line in h.delivered[20:25])
    assert duplicated <= 100


def test_delete_and_recreate_while_running(tmp_path: Path) -> None:
    """Row 10 (running): the old inode is held open, so the new file is a new identity."""
    h = Harness(tmp_path)
    a, b = numbered("A", 10), numbered("B", 5)
    writer = AppendWriter(h.path)
    writer.lines(a)
    h.tick()
    os.unlink(h.path)
    writer.lines(numbered("A", 3, start=10))  # written into the deleted file: still ours
    writer.close()
    AppendWriter(h.path).lines(b)
    h.settle()
    h.assert_exactly(a + numbered("A", 3, start=10) + b)
    assert h.texts_of("B") == b


def test_delete_and_recreate_same_inode_while_stopped(tmp_path: Path) -> None:
    """Row 10 (inode reused): unlink + create gets the same inode; the new file is read from 0."""
    h = Harness(tmp_path)
    a, b = numbered("A", 10), numbered("B", 30)
    AppendWriter(h.path).lines(a)
    h.tick()
    inode = os.stat(h.path).st_ino
    h.stop()
    os.unlink(h.path)
    AppendWriter(h.path).lines(b)
    if os.stat(h.path).st_ino != inode:
        pytest.skip("this filesystem did not reuse the inode")
    h2 = h.restart()
    h2.tick()
    assert h2.texts() == a + b


def test_symlink_switched_to_a_new_target(tmp_path: Path) -> None:
    """Row 11: the link is replaced atomically; the old target is drained, the new read from 0."""
    h = Harness(tmp_path)
    first, second = tmp_path / "run-1.log", tmp_path / "run-2.log"
    w1 = AppendWriter(first)
    os.symlink(first, h.path)
    a, b, c = numbered("A", 20), numbered("B", 10), numbered("C", 15)
    w1.lines(a)
    h.tick()
    AppendWriter(second).lines(c)
    os.symlink(second, h.path + ".tmp")
    os.replace(h.path + ".tmp", h.path)
    w1.lines(b)  # the old target is still being written
    h.tick(advance=1)
    w1.close()
    h.settle()
    h.assert_exactly(a + b + c)
    assert h.texts_of("A") + h.texts_of("B") == a + b
    assert h.tailer.watch_dirs() == frozenset({str(tmp_path)})


def test_partial_line_then_its_completion(tmp_path: Path) -> None:
    """Row 12: b"abc", three polls, b"def\\n" → one line "abcdef"."""
    h = Harness(tmp_path)
    writer = AppendWriter(h.path)
    writer.write(b"abc")
    for _ in range(3):
        h.tick(advance=100)
    assert h.delivered == []
    writer.write(b"def\n")
    h.tick()
    assert h.texts() == ["abcdef"]
    assert h.delivered[0].raw_len == 6
    assert h.delivered[0].position[1] == 7


def test_partial_line_at_rotation_is_flushed_once_after_grace(tmp_path: Path) -> None:
    """Row 14: a dangling tail of a rotated file is delivered once, marked partial."""
    h = Harness(tmp_path, rotate_grace=5.0)
    writer = AppendWriter(h.path)
    writer.write(b"done\ndangl")
    h.tick()
    os.rename(h.path, h.path + ".1")
    writer.write(b"ing")
    writer.close()
    AppendWriter(h.path).lines(["fresh"])
    h.tick(advance=1)
    assert h.texts() == ["done", "fresh"]
    h.tick(advance=3)
    assert h.texts() == ["done", "fresh"]
    h.tick(advance=2)
    assert h.texts() == ["done", "fresh", "dangling"]
    last = h.delivered[-1]
    assert last.partial and not last.truncated and last.raw_len == 8 and last.line_no == 2
    h.settle()
    assert h.texts() == ["done", "fresh", "dangling"]
    assert h.tailer.stats.partial_lines == 1


def test_ten_mib_line_is_truncated_and_memory_stays_bounded(tmp_path: Path) -> None:
    """Row 15: 1 KiB, 10 MiB, 1 KiB lines: neighbours intact, the long one cut and flagged."""
    h = Harness(tmp_path, max_line_bytes=1 << 20, read_chunk_bytes=1 << 20)
    small1, small2 = "a" * 1024, "b" * 1024
    huge = b"H" * (10 << 20)
    with open(h.path, "wb") as f:
        f.write(small1.encode() + b"\n" + huge + b"\n" + small2.encode() + b"\n")
    del huge
    tracemalloc.start()
    try:
        h.drain()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert h.texts()[0] == small1 and h.texts()[2] == small2
    long_line = h.delivered[1]
    assert long_line.truncated and long_line.raw_len == 10 << 20
    assert long_line.text == "H" * (1 << 20)
    assert not h.delivered[0].truncated and not h.delivered[2].truncated
    assert h.delivered[2].line_no == 3
    assert peak < 8 << 20, f"peak {peak} bytes"
    assert h.tailer.stats.truncated_lines == 1


def test_long_line_in_one_chunk_and_at_exact_limit(tmp_path: Path) -> None:
    h = Harness(tmp_path, max_line_bytes=10, read_chunk_bytes=4096)
    AppendWriter(h.path).write(b"0123456789\n0123456789X\nshort\n")
    h.tick()
    assert [(line.text, line.truncated, line.raw_len) for line in h.delivered] == [
        ("0123456789", False, 10),
        ("0123456789", True, 11),
        ("short", False, 5),
    ]


def test_invalid_utf8_nul_and_crlf(tmp_path: Path) -> None:
    """Row 16: bytes are decoded as UTF-8 with errors="replace"; \\r\\n is a line end."""
    h = Harness(tmp_path)
    writer = AppendWriter(h.path)
    writer.write(b"\xff\xfe bad\r\nok\r\nmid\x00nul\ncaf\xc3\xa9\nsplit \xe2\x82")
    h.tick()
    writer.write(b"\xac euro\nbare\rcr\n")
    h.tick()
    assert h.texts() == ["\ufffd\ufffd bad", "ok", "mid\x00nul", "café", "split € euro", "bare\rcr"]
    assert [line.raw_len for line in h.delivered] == [7, 3, 7, 5, 14, 7]


def test_file_deleted_while_open_with_unread_data(tmp_path: Path) -> None:
    """Row 19: unlinked while the sink is blocked: drained to EOF, closed only after acks."""
    h = Harness(tmp_path, poll_budget_bytes=2048)
    lines = numbered("U", 300)
    AppendWriter(h.path).lines(lines)
    h.acks = False
    h.tick()
    os.unlink(h.path)
    for _ in range(20):
        h.tick(advance=1)
    assert h.texts() == lines
    assert h.tailer.stats.files_closed == 0
    h.acks = True
    h.ack_all()
    h.tick(advance=10)
    assert h.tailer.stats.files_closed == 1
    assert h.tailer.checkpoint()["seen"] == []  # a deleted file leaves nothing to remember


def test_small_new_file_is_read_on_the_next_poll(tmp_path: Path) -> None:
    """Row 26: a 10-byte, one-line file appears: its line arrives on the next poll."""
    h = Harness(tmp_path)
    h.tick()
    assert [s.state for s in h.tailer.statuses()] == ["missing"]
    Path(h.path).write_bytes(b"small one\n")
    h.tick()
    assert h.texts() == ["small one"]
    assert [s.state for s in h.tailer.statuses()] == ["ok"]


def test_two_files_with_identical_first_kib_are_both_tailed(tmp_path: Path) -> None:
    """Row 27: same 2 KiB header in two files matched by a glob; both followed, also after restart."""
    header = numbered("HEADER", 50)
    h = Harness(tmp_path, paths=(str(tmp_path / "*.log"),))
    wa, wb = AppendWriter(tmp_path / "a.log"), AppendWriter(tmp_path / "b.log")
    wa.lines([*header, *numbered("A", 10)])
    wb.lines([*header, *numbered("B", 10)])
    h.tick()
    h = h.restart()
    wa.lines(numbered("A", 5, start=10))
    wb.lines(numbered("B", 5, start=10))
    h.tick()
    assert [line.text for line in h.delivered if line.path.endswith("a.log")] == [
        *header,
        *numbered("A", 15),
    ]
    assert [line.text for line in h.delivered if line.path.endswith("b.log")] == [
        *header,
        *numbered("B", 15),
    ]


def test_glob_picks_up_files_that_appear_later(tmp_path: Path) -> None:
    h = Harness(tmp_path, paths=(str(tmp_path / "engine-*.log"),))
    h.tick()
    assert [(s.path, s.state) for s in h.tailer.statuses()] == [
        (str(tmp_path / "engine-*.log"), "missing")
    ]
    for name in ("engine-0.log", "engine-1.log", "other.txt"):
        AppendWriter(tmp_path / name).lines([f"from {name}"])
    h.tick()
    assert sorted(h.texts()) == ["from engine-0.log", "from engine-1.log"]
    assert {line.path for line in h.delivered} == {
        str(tmp_path / "engine-0.log"),
        str(tmp_path / "engine-1.log"),
    }


def test_errors_are_data_and_other_files_keep_going(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Permission denied (root ignores modes, so the open is made to fail) and a directory."""
    bad, good, folder = tmp_path / "bad.log", tmp_path / "good.log", tmp_path / "dir.log"
    folder.mkdir()
    AppendWriter(bad).lines(["secret"])
    AppendWriter(good).lines(["fine"])
    real_open = tail_files.open_file

    def deny(path: str) -> tuple[int, os.stat_result]:
        if path == str(bad):
            raise PermissionError(13, "Permission denied", path)
        return real_open(path)

    monkeypatch.setattr(tail_files, "open_file", deny)
    h = Harness(tmp_path, paths=(str(bad), str(good), str(folder), str(tmp_path / "none.log")))
    h.tick()
    assert h.texts() == ["fine"]
    states = {Path(s.path).name: (s.state, s.error) for s in h.tailer.statuses()}
    assert states["bad.log"][0] == "error" and "Permission denied" in str(states["bad.log"][1])
    assert states["dir.log"][0] == "error" and "not a regular file" in str(states["dir.log"][1])
    assert states["good.log"] == ("ok", None)
    assert states["none.log"] == ("missing", None)
    monkeypatch.setattr(tail_files, "open_file", real_open)
    h.tick()
    assert h.texts() == ["fine", "secret"]
    assert {Path(s.path).name: s.state for s in h.tailer.statuses()}["bad.log"] == "ok"


def test_read_error_is_reported_and_retried(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    h = Harness(tmp_path)
    writer = AppendWriter(h.path)
    writer.lines(["one"])
    h.tick()
    writer.lines(["two"])
    real_pread = os.pread

    def failing(fd: int, size: int, offset: int) -> bytes:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "pread", failing)
    h.tick()
    assert h.tailer.statuses()[0].state == "error"
    assert h.tailer.stats.errors_by_type == {"OSError": h.tailer.stats.errors}
    monkeypatch.setattr(os, "pread", real_pread)
    h.tick()
    assert h.texts() == ["one", "two"]
    assert h.tailer.statuses()[0].state == "ok"


def test_start_at_end_skips_history_only_on_the_first_start(tmp_path: Path) -> None:
    old = numbered("OLD", 10)
    AppendWriter(tmp_path / "app.log").write(encode(old) + b"half")
    h = Harness(tmp_path, start_at="end")
    h.tick()
    assert h.texts() == []
    AppendWriter(h.path).write(b" line\n")
    h.tick()
    assert h.texts() == ["half line"]
    h = h.restart()
    AppendWriter(h.path).lines(["after restart"])
    h.tick()
    assert h.texts() == ["half line", "after restart"]


def test_ack_is_cumulative_and_checkpoint_covers_only_acked_lines(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    h.acks = False
    lines = numbered("K", 10)
    AppendWriter(h.path).lines(lines)
    got = h.tick()
    h.tailer.ack(got[3].position)  # mid-batch
    entry = h.tailer.checkpoint()["files"][0]
    assert (entry["offset"], entry["line_no"]) == (got[3].position[1], 4)
    h.tailer.ack(got[1].position)  # older: no effect
    assert h.tailer.checkpoint()["files"][0]["offset"] == got[3].position[1]
    with pytest.raises(ValueError, match="never delivered"):
        h.tailer.ack((99, 0))
    saved = h.tailer.checkpoint()
    h.tailer.close()
    h2 = Harness(tmp_path, checkpoint=saved)
    h2.tick()
    assert h2.texts() == lines[4:]
    assert h2.delivered[0].line_no == 5


def test_many_files_are_read_round_robin_within_the_budget(tmp_path: Path) -> None:
    h = Harness(tmp_path, paths=(str(tmp_path / "*.log"),), poll_budget_bytes=4096)
    for i in range(5):
        AppendWriter(tmp_path / f"f{i}.log").lines(numbered(f"F{i}", 500))
    h.tick()
    assert h.tailer.more
    h.drain()
    assert len(h.texts()) == 2500
    for i in range(5):
        assert [t for t in h.texts() if t.startswith(f"F{i}-")] == numbered(f"F{i}", 500)


def test_truncation_between_check_and_read_is_not_taken_for_the_same_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """copytruncate lands after the poll checked the anchor and before it reads; the writer
    (no O_APPEND) resumes exactly at our offset, so the read alone cannot tell."""
    h = Harness(tmp_path)
    writer = PwriteWriter(h.path)
    a, b = numbered("A", 20), numbered("B", 5)
    writer.lines(a)
    h.tick()
    real_pread = os.pread
    resume_at = writer.offset

    def racing(fd: int, size: int, offset: int) -> bytes:
        if offset == resume_at and not racing.fired:  # type: ignore[attr-defined]
            racing.fired = True  # type: ignore[attr-defined]
            shutil.copyfile(h.path, h.path + ".1")
            os.truncate(h.path, 0)
            writer.lines(b)
        return real_pread(fd, size, offset)

    racing.fired = False  # type: ignore[attr-defined]
    monkeypatch.setattr(os, "pread", racing)
    h.tick()
    assert h.texts() == a  # the read was undone
    h.tick()
    assert h.texts() == a + b
    assert [line.line_no for line in h.delivered[20:]] == [1, 2, 3, 4, 5]
    assert h.tailer.stats.truncations == 1
