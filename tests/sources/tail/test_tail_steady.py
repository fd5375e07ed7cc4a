"""The tailer's steady state: a wake-up that finds the same files under the same names, in
directories that did not change, skips the sibling scans and rewrite checks, and still notices
truncations at once; a full reconcile runs at least every ``poll_interval``.

The directory's mtime is set a minute back after each change, so that its listing is trusted (a
listing taken within a couple of seconds of the directory's last change never is).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from inferwatch.sources.tail.siblings import SiblingTracker
from sources.tail.tail_harness import AppendWriter, Harness, encode, numbered

STEP = 0.01  # well inside poll_interval (1 s)


def _age(directory: Path) -> None:
    past = time.time() - 60
    os.utime(directory, (past, past))


class _Scans:
    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        real = SiblingTracker.scan

        def counting(tracker: SiblingTracker, *args: object, **kwargs: object) -> object:
            self.count += 1
            return real(tracker, *args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(SiblingTracker, "scan", counting)


def _steady(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[Harness, AppendWriter, _Scans]:
    h = Harness(tmp_path)
    writer = AppendWriter(h.path)
    scans = _Scans(monkeypatch)
    writer.lines(numbered("S", 5))
    h.tick()
    _age(tmp_path)
    h.tick(advance=1.0)  # lists the aged directory: from now on the listing is trusted
    scans.count = 0
    return h, writer, scans


def test_appends_in_steady_state_skip_the_sibling_scan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    h, writer, scans = _steady(tmp_path, monkeypatch)
    lines = numbered("A", 30)
    for line in lines:
        writer.lines([line])
        h.tick(advance=STEP)
    assert h.texts() == numbered("S", 5) + lines
    assert scans.count == 0
    h.tick(advance=1.0)  # the periodic full reconcile
    assert scans.count == 1


def test_a_new_name_in_the_directory_ends_the_steady_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rename rotation: the path names another file and the directory changed."""
    h, writer, scans = _steady(tmp_path, monkeypatch)
    a, b = numbered("A", 10), numbered("B", 10)
    writer.lines(a)
    os.rename(h.path, h.path + ".1")
    writer.lines(b)  # still the old file
    writer.close()
    fresh = AppendWriter(h.path)
    c = numbered("C", 10)
    fresh.lines(c)
    h.tick(advance=STEP)
    assert scans.count == 1
    h.settle()
    h.assert_exactly([*numbered("S", 5), *a, *b, *c])


def test_truncation_is_noticed_in_steady_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    h, writer, scans = _steady(tmp_path, monkeypatch)
    a, b = numbered("A", 20), numbered("B", 3)
    writer.lines(a)
    h.tick(advance=STEP)
    os.truncate(h.path, 0)
    writer.lines(b)
    h.tick(advance=STEP)
    assert h.texts() == [*numbered("S", 5), *a, *b]
    assert h.tailer.stats.truncations == 1
    assert scans.count == 0


def test_truncate_then_regrow_past_the_offset_is_noticed_in_steady_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The size never looks smaller: the read's anchor check flags it, the tailer looks again."""
    h, writer, _ = _steady(tmp_path, monkeypatch)
    a, b = numbered("A", 20), numbered("B", 50)
    writer.lines(a)
    h.tick(advance=STEP)
    os.truncate(h.path, 0)
    writer.lines(b)
    assert os.path.getsize(h.path) > len(encode([*numbered("S", 5), *a]))
    h.tick(advance=STEP)
    assert h.tailer.more  # the undone read asks for another poll at once
    h.drain()
    assert h.texts() == [*numbered("S", 5), *a, *b]
    assert h.tailer.stats.truncations == 1


def test_copytruncate_in_steady_state_reads_the_rest_from_the_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    h, writer, _ = _steady(tmp_path, monkeypatch)
    a, b, c = numbered("A", 20), numbered("B", 20), numbered("C", 20)
    writer.lines(a)
    h.tick(advance=STEP)
    with open(h.path + ".1", "wb") as copy:  # logrotate: an empty copy first, then the bytes
        h.tick(advance=STEP)
        _age(tmp_path)
        h.tick(advance=1.0)
        writer.lines(b)  # not read yet
        copy.write(Path(h.path).read_bytes())
    os.truncate(h.path, 0)
    writer.lines(c)
    h.tick(advance=STEP)
    assert h.texts() == [*numbered("S", 5), *a, *b, *c]
    assert h.tailer.stats.copies_read == 1


def test_a_sibling_that_grew_from_empty_is_found_by_the_periodic_full_reconcile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An unknown sibling, empty when the directory changed, written later (no name change)."""
    h, writer, _ = _steady(tmp_path, monkeypatch)
    # A restart makes unknown siblings readable (on the very first start they are history).
    h = h.restart()
    h.tick()
    sibling = tmp_path / "app.log.1"
    sibling.touch()
    h.tick(advance=STEP)
    _age(tmp_path)
    h.tick(advance=1.0)
    d = numbered("D", 5)
    sibling.write_bytes(encode(d))
    h.tick(advance=STEP)
    assert "D-000000" not in " ".join(h.texts())
    h.tick(advance=1.0)
    h.tick()
    assert h.texts_of("D") == d
    writer.close()
