"""Restarts of the tailer core from its checkpoint: graceful, crashed, and with files changed meanwhile.

Fake clock, real files, no sleeps. The SIGKILL test with a real subprocess is test_tail_crash.py.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from inferwatch.sources.tail.identity import ANCHOR_BYTES, digest
from inferwatch.sources.tail.tailer import CheckpointError, TailConfig, Tailer
from sources.tail.tail_harness import AppendWriter, Harness, PwriteWriter, encode, numbered


def test_partial_line_across_a_restart_is_delivered_exactly_once(tmp_path: Path) -> None:
    """Row 13: write a partial line, stop, append the rest, start."""
    h = Harness(tmp_path)
    writer = AppendWriter(h.path)
    writer.write(b"first\nsec")
    h.tick()
    h = h.restart()
    writer.write(b"ond\nthird\n")
    h.tick()
    assert h.texts() == ["first", "second", "third"]
    assert [line.line_no for line in h.delivered] == [1, 2, 3]


def test_graceful_restart_mid_file(tmp_path: Path) -> None:
    """Row 20: stop after k acknowledged lines, restart, compare."""
    lines = numbered("G", 1000)
    AppendWriter(tmp_path / "app.log").lines(lines)
    h = Harness(tmp_path, poll_budget_bytes=8000)
    h.tick()
    assert 0 < len(h.delivered) < 1000
    h = h.restart()
    h.drain()
    assert h.texts() == lines
    assert [line.line_no for line in h.delivered] == list(range(1, 1001))


def test_crash_between_emit_and_checkpoint_redelivers_only_uncommitted(tmp_path: Path) -> None:
    """Row 21 (in-process): delivered but not committed lines come again; committed never do."""
    lines = numbered("K", 100)
    writer = AppendWriter(tmp_path / "app.log")
    writer.lines(lines[:40])
    h = Harness(tmp_path)
    h.tick()
    h.acks = False
    writer.lines(lines[40:70])
    h.tick()  # delivered, never acknowledged
    h = h.crash()
    writer.lines(lines[70:])
    h.tick()
    assert h.texts() == lines  # the committed record: exactly once
    assert [line.line_no for line in h.delivered] == list(range(1, 101))


def test_crash_after_mid_batch_ack(tmp_path: Path) -> None:
    lines = numbered("M", 50)
    AppendWriter(tmp_path / "app.log").lines(lines)
    h = Harness(tmp_path)
    h.acks = False
    got = h.tick()
    h.tailer.ack(got[9].position)
    h.committed = got[:10]
    h.saved = h.tailer.checkpoint()
    h = h.crash()
    h.tick()
    assert h.texts() == lines


def test_rename_rotation_while_stopped(tmp_path: Path) -> None:
    """Row 23: finish .1 from the offset, then the new file from 0."""
    writer = AppendWriter(tmp_path / "app.log")
    a, b, c = numbered("A", 30), numbered("B", 10), numbered("C", 15)
    writer.lines(a)
    h = Harness(tmp_path)
    h.tick()
    h.stop()
    writer.lines(b)
    writer.close()
    os.rename(h.path, h.path + ".1")
    AppendWriter(h.path).lines(c)
    h = h.restart()
    h.tick()
    assert h.texts() == a + b + c
    assert [line.line_no for line in h.delivered] == [*range(1, 41), *range(1, 16)]


def test_several_rename_rotations_while_stopped(tmp_path: Path) -> None:
    """Row 23 plus an intermediate file that was created and rotated entirely while stopped."""
    writer = AppendWriter(tmp_path / "app.log")
    a, b, mid, c = numbered("A", 30), numbered("B", 10), numbered("I", 12), numbered("C", 5)
    writer.lines(a)
    h = Harness(tmp_path)
    h.tick()
    h.stop()
    writer.lines(b)
    writer.close()
    os.rename(h.path, h.path + ".1")
    AppendWriter(h.path).lines(mid)
    os.rename(h.path + ".1", h.path + ".2")
    os.rename(h.path, h.path + ".1")
    AppendWriter(h.path).lines(c)
    h = h.restart()
    h.tick()
    assert h.texts() == a + b + mid + c


def test_rotated_history_is_not_reread_after_restart(tmp_path: Path) -> None:
    """Known siblings (history at first start, files already finished) stay unread."""
    AppendWriter(tmp_path / "app.log.2").lines(numbered("OLD2", 5))
    AppendWriter(tmp_path / "app.log.1").lines(numbered("OLD1", 5))
    writer = AppendWriter(tmp_path / "app.log")
    writer.lines(numbered("A", 5))
    h = Harness(tmp_path)
    h.tick()
    assert h.texts() == numbered("A", 5)  # existing rotations are history on a first start
    writer.close()
    os.rename(h.path, h.path + ".0")  # rotated away, drained and closed while running
    AppendWriter(h.path).lines(numbered("B", 5))
    h.settle()
    h = h.restart()
    AppendWriter(h.path).lines(numbered("B", 3, start=5))
    h.tick()
    assert h.texts() == numbered("A", 5) + numbered("B", 8)


def test_copytruncate_while_stopped(tmp_path: Path) -> None:
    """Row 24: the anchor no longer matches: new content from 0, the rest of the old from .1."""
    writer = AppendWriter(tmp_path / "app.log")
    a, b, c = numbered("A", 30), numbered("B", 10), numbered("C", 15)
    writer.lines(a)
    h = Harness(tmp_path)
    h.tick()
    h.stop()
    writer.lines(b)
    shutil.copyfile(h.path, h.path + ".1")
    os.truncate(h.path, 0)
    writer.lines(c)
    h = h.restart()
    h.tick()
    assert h.texts() == a + b + c


def test_copytruncate_while_stopped_with_a_non_append_writer(tmp_path: Path) -> None:
    writer = PwriteWriter(tmp_path / "app.log")
    a, b = numbered("A", 30), numbered("B", 50)
    writer.lines(a)
    h = Harness(tmp_path)
    h.tick()
    h.stop()
    shutil.copyfile(h.path, h.path + ".1")
    os.truncate(h.path, 0)
    writer.lines(b)
    h = h.restart()
    h.tick()
    assert h.texts() == a + b


@pytest.mark.parametrize("offset", ["real", 10**6])
def test_stale_checkpoint_on_a_reused_inode_reads_from_zero(
    tmp_path: Path, offset: str | int
) -> None:
    """Row 25: a checkpoint for inode X; a new small (or larger) file now has inode X."""
    a, b = numbered("A", 30), numbered("B", 3 if offset == "real" else 40)
    AppendWriter(tmp_path / "app.log").lines(a)
    h = Harness(tmp_path)
    h.tick()
    h.stop()
    inode = os.stat(h.path).st_ino
    saved: dict[str, Any] = copy.deepcopy(h.saved) or {}
    if offset != "real":
        saved["files"][0]["offset"] = offset
    os.unlink(h.path)
    AppendWriter(h.path).lines(b)
    if os.stat(h.path).st_ino != inode:
        pytest.skip("this filesystem did not reuse the inode")
    h2 = Harness(tmp_path, checkpoint=saved)
    h2.tick()
    assert h2.texts() == b
    assert h2.tailer.stats.checkpoint_entries_expired == 1


def test_restart_with_a_grown_longer_same_inode_file_rewritten(tmp_path: Path) -> None:
    """Rewritten in place while stopped, longer than the offset: the anchor mismatch restarts at 0."""
    writer = AppendWriter(tmp_path / "app.log")
    writer.lines(numbered("A", 10))
    h = Harness(tmp_path)
    h.tick()
    h.stop()
    os.truncate(h.path, 0)
    writer.lines(numbered("B", 30))
    h = h.restart()
    h.tick()
    assert h.texts() == numbered("A", 10) + numbered("B", 30)


def test_checkpoint_is_json_and_round_trips(tmp_path: Path) -> None:
    AppendWriter(tmp_path / "app.log").lines(numbered("J", 5))
    h = Harness(tmp_path)
    h.tick()
    saved = json.loads(json.dumps(h.tailer.checkpoint()))
    assert saved["version"] == 1
    (entry,) = saved["files"]
    assert set(entry) == {
        "path",
        "name",
        "dev",
        "ino",
        "prefix_len",
        "prefix",
        "offset",
        "line_no",
        "anchor",
    }
    assert entry["offset"] == len(encode(numbered("J", 5))) and entry["line_no"] == 5
    Tailer(h.config, checkpoint=saved).close()


@pytest.mark.parametrize(
    "mutate",
    [
        lambda c: [],
        lambda c: {**c, "version": 2},
        lambda c: {k: v for k, v in c.items() if k != "files"},
        lambda c: {**c, "files": [{**c["files"][0], "offset": -1}]},
        lambda c: {**c, "files": [{**c["files"][0], "ino": True}]},
        lambda c: {**c, "files": [{**c["files"][0], "prefix": 7}]},
        lambda c: {**c, "files": ["oops"]},
        lambda c: {**c, "seen": [{"slot": "x"}]},
    ],
)
def test_corrupt_checkpoint_is_rejected_loudly(tmp_path: Path, mutate: Any) -> None:
    """Row 22 (tailer side): a malformed record raises CheckpointError; the caller moves its
    store aside and reports it. Never a silent restart from offset 0."""
    AppendWriter(tmp_path / "app.log").lines(["x"])
    h = Harness(tmp_path)
    h.tick()
    with pytest.raises(CheckpointError):
        Tailer(h.config, checkpoint=mutate(h.tailer.checkpoint()))


def test_empty_checkpoint_means_restart_not_first_start(tmp_path: Path) -> None:
    """An empty (but valid) checkpoint: rotated siblings appeared while away, so read them."""
    AppendWriter(tmp_path / "app.log.1").lines(["rotated while away"])
    AppendWriter(tmp_path / "app.log").lines(["live"])
    config = TailConfig(paths=(str(tmp_path / "app.log"),))
    with Tailer(config, checkpoint={"version": 1, "files": [], "seen": []}) as tailer:
        assert [line.text for line in tailer.poll()] == ["rotated while away", "live"]
    with Tailer(config) as tailer:
        assert [line.text for line in tailer.poll()] == ["live"]


def test_checkpoint_before_the_first_poll_and_after_close_forgets_nothing(tmp_path: Path) -> None:
    AppendWriter(tmp_path / "app.log").lines(numbered("A", 5))
    h = Harness(tmp_path)
    h.tick()
    saved = h.tailer.checkpoint()
    h.tailer.close()
    assert h.tailer.checkpoint() == saved
    again = Tailer(h.config, checkpoint=saved)
    assert again.checkpoint() == saved
    again.close()
    assert again.checkpoint() == saved


def test_a_line_acked_inside_a_block_is_checkpointed_with_its_anchor(tmp_path: Path) -> None:
    """Records are acknowledged one by one; the anchor of a line inside a delivered block is
    read when the checkpoint is taken, and it is the bytes before that line's end."""
    h = Harness(tmp_path)
    h.acks = False
    AppendWriter(h.path).lines(numbered("A", 5))
    lines = h.tick()
    assert len(lines) == 5
    h.tailer.ack(lines[1].position)
    saved = h.tailer.checkpoint()
    (entry,) = saved["files"]
    offset = lines[1].position[1]
    data = (tmp_path / "app.log").read_bytes()
    assert entry["offset"] == offset
    assert entry["anchor"] == digest(data[max(0, offset - ANCHOR_BYTES) : offset])
    h.tailer.close()
    restarted = Harness(tmp_path, checkpoint=saved)
    assert restarted.tick()[0].text == lines[2].text  # resumed right after the acked line
