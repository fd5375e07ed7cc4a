"""Rotations that rename files while the tailer lists them: a file seen under two names, or not
at all, must still be read exactly once.

A rename chain (``.2`` → ``.3``, ``.1`` → ``.2``, live → ``.1``) running during one of our
directory listings can show a file under two names, or hide it (its next name did not exist
yet, or was momentarily free). Here the same situations are made without timing: a hard link
gives one file two names, a listing taken before a rename is stale, and a file moved out of the
directory is "nowhere" until it is moved back. Fake clock, real files, no sleeps.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from inferwatch.sources.tail.checkpoint import Checkpoint
from inferwatch.sources.tail.identity import DirListing, SiblingRule
from inferwatch.sources.tail.restore import resume_all, resume_relisting
from sources.tail.tail_harness import AppendWriter, Harness, numbered

RULE = SiblingRule(("{name}.*", "{name}-*"), (".gz",))


def test_a_rotated_file_listed_under_two_names_is_read_once(tmp_path: Path) -> None:
    a, mid = numbered("A", 5), numbered("I", 7)
    AppendWriter(tmp_path / "app.log").lines(a)
    h = Harness(tmp_path)
    h.tick()
    AppendWriter(tmp_path / "app.log.1").lines(mid)  # a rotation we never saw as live
    os.link(tmp_path / "app.log.1", tmp_path / "app.log.2")  # the same file, a second name
    h.tick()
    h.assert_exactly(a + mid)
    assert h.tailer.stats.intermediates_read == 1


def _stopped_with_a_rotated_file_half_read(tmp_path: Path) -> tuple[Harness, AppendWriter]:
    """The tailer read ``A`` from app.log, which was then rotated to app.log.1 and grew by ``B``
    while the tailer was stopped; its checkpoint holds app.log.1 at the end of ``A``."""
    writer = AppendWriter(tmp_path / "app.log")
    writer.lines(numbered("A", 20))
    h = Harness(tmp_path)
    h.tick()
    h.stop()
    writer.lines(numbered("B", 6))
    writer.close()
    os.rename(h.path, h.path + ".1")
    AppendWriter(h.path).lines(numbered("C", 4))
    return h, writer


def test_a_checkpointed_file_away_at_start_is_resumed_when_it_comes_back(tmp_path: Path) -> None:
    h, _ = _stopped_with_a_rotated_file_half_read(tmp_path)
    rotated = h.path + ".1"
    ino = os.stat(rotated).st_ino
    away = tmp_path / "elsewhere"
    away.mkdir()
    os.rename(rotated, away / "app.log.1")  # not found anywhere at the restart
    h = h.restart()
    h.tick()
    assert h.texts() == numbered("A", 20) + numbered("C", 4)
    assert h.saved is not None
    assert ino in [entry["ino"] for entry in h.saved["files"]]  # pending, not forgotten
    h = h.crash()  # pending across a restart too
    h.tick()
    os.rename(away / "app.log.1", rotated)
    h.tick()
    h.assert_exactly(numbered("A", 20) + numbered("C", 4) + numbered("B", 6))
    assert [line.line_no for line in h.delivered if line.text.startswith("B")] == [*range(21, 27)]
    assert h.tailer.stats.checkpoint_entries_expired == 0
    assert h.tailer.stats.intermediates_read == 0


def test_a_pending_record_expires_once_the_directory_is_seen_without_it(tmp_path: Path) -> None:
    h, _ = _stopped_with_a_rotated_file_half_read(tmp_path)
    ino = os.stat(h.path + ".1").st_ino
    os.unlink(h.path + ".1")
    h = h.restart()
    h.tick()
    assert h.saved is not None
    assert ino in [entry["ino"] for entry in h.saved["files"]]
    assert h.tailer.stats.checkpoint_entries_expired == 0
    for _ in range(3):
        h.tick()
    assert ino not in [entry["ino"] for entry in h.saved["files"]]
    assert h.tailer.stats.checkpoint_entries_expired == 1
    h.assert_exactly(numbered("A", 20) + numbered("C", 4))


def test_a_pending_record_of_a_file_with_other_content_is_expired(tmp_path: Path) -> None:
    """The recorded inode comes back holding something else: read it as new, from 0."""
    h, _ = _stopped_with_a_rotated_file_half_read(tmp_path)
    away = tmp_path / "elsewhere"
    away.mkdir()
    os.rename(h.path + ".1", away / "app.log.1")
    h = h.restart()
    h.tick()
    with open(away / "app.log.1", "r+b") as rewritten:  # same inode, other bytes
        rewritten.write(b"Z" * 30)
    os.rename(away / "app.log.1", h.path + ".1")
    h.tick()
    assert h.tailer.stats.checkpoint_entries_expired == 1
    assert h.tailer.stats.intermediates_read == 1
    assert h.texts()[-1].startswith("B-000005")


def _saved_entry(tmp_path: Path) -> Checkpoint:
    h, _ = _stopped_with_a_rotated_file_half_read(tmp_path)
    assert h.saved is not None
    return Checkpoint.from_json(h.saved)


class StaleListing(DirListing):
    """A listing taken just before a rename in the same timestamp tick: it cannot see it."""

    def __init__(self, names: list[str]) -> None:
        super().__init__()
        self.fixed = names

    def names(self, directory: str) -> list[str]:
        return list(self.fixed)


def test_restore_lists_again_for_a_file_renamed_after_the_listing(tmp_path: Path) -> None:
    (entry,) = _saved_entry(tmp_path).files
    assert DirListing().names(str(tmp_path)) == ["app.log", "app.log.1"]
    listing = StaleListing(["app.log", "app.log.1"])
    os.rename(tmp_path / "app.log.1", tmp_path / "app.log.2")  # a name the listing lacks
    first = resume_all([entry], {}, RULE, listing, set())
    assert (first.resumed, first.missing) == ([], [entry])
    found, fresh = resume_relisting([entry], {}, RULE, listing)
    assert [item.path for item in found.resumed] == [str(tmp_path / "app.log.2")]
    assert found.missing == []
    assert fresh is not listing
    for item in found.resumed:
        os.close(item.fd)


def test_a_file_gone_at_restore_is_missing_not_expired(tmp_path: Path) -> None:
    """Missing records go pending (a rename may hide them); only contrary content expires."""
    (entry,) = _saved_entry(tmp_path).files
    os.unlink(tmp_path / "app.log.1")
    found, _ = resume_relisting([entry], {}, RULE, DirListing())
    assert (found.resumed, found.missing) == ([], [entry])


def test_a_listing_is_reused_until_the_directory_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No listing per poll of a quiet directory; a new name shows at once (mtime changes), and
    a listing taken in the directory's own timestamp tick is taken again (racy)."""
    calls: list[str] = []
    real = os.listdir

    def counting(path: str) -> list[str]:
        calls.append(path)
        return real(path)

    monkeypatch.setattr(os, "listdir", counting)
    (tmp_path / "app.log").write_text("x\n")
    listing = DirListing()
    assert listing.names(str(tmp_path)) == ["app.log"]
    assert listing.names(str(tmp_path)) == ["app.log"]
    assert len(calls) == 2  # racy: the directory changed within RACY_NS of the listing
    old = time.time_ns() - 10 * DirListing.RACY_NS
    os.utime(tmp_path, ns=(old, old))
    listing.names(str(tmp_path))
    assert [listing.names(str(tmp_path)) for _ in range(5)] == [["app.log"]] * 5
    assert len(calls) == 3  # one more listing, then reused
    (tmp_path / "app.log.1").write_text("y\n")
    assert listing.names(str(tmp_path)) == ["app.log", "app.log.1"]
    assert len(calls) == 4
