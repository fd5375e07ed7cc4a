"""The parallel anchor scan finds every line the engine pipeline needs: replay over the scanned
lines gives the same events as replay over every line of the file."""

from __future__ import annotations

import io
import json
import random
from collections.abc import Iterator
from datetime import UTC
from pathlib import Path

import pytest

from inferwatch.replay import engine_parts, timeline
from inferwatch.replay.engine_scan import anchor_lines
from inferwatch.replay.output import Writer
from inferwatch.replay.runner import Replay, ReplayInputs
from inferwatch.replay.timeline import TimeContext

FIXTURES = Path(__file__).parents[1] / "fixtures"
NOISE = [
    'INFO:     127.0.0.1:52460 - "POST /v1/chat/completions HTTP/1.1" 200 OK',
    "INFO 10-29 01:09:12 [logger.py:43] Received request chatcmpl-1e62: prompt: '"
    + 'an Error in prose, Traceback words, File "x" and memory ' * 40
    + "'",
    "INFO 10-29 01:09:12 [async_llm.py:261] Added request chatcmpl-1e62.",
]


def every_line(path: Path) -> Iterator[tuple[int, bytes]]:
    with path.open("rb") as fh:
        for number, raw in enumerate(fh, start=1):
            yield number, raw.rstrip(b"\n")


def replay_docs(path: Path, monkeypatch: pytest.MonkeyPatch, reader: object) -> list[str]:
    monkeypatch.setattr(timeline, "ENGINE_LINES", reader)
    out = io.StringIO()
    ctx = TimeContext(year=2026, tz=UTC)
    replay = Replay(ReplayInputs(engine_logs=[str(path)]), Writer(out, "jsonl", ctx.tz), ctx)
    import asyncio

    asyncio.run(replay.run())
    doc, _ = replay.summary()
    doc.pop("records")
    return sorted([*out.getvalue().splitlines(), json.dumps(doc, sort_keys=True)])


def mixed_log(tmp_path: Path) -> Path:
    """The public corpus and the constructed logs, shuffled between bulk request logging."""
    rng = random.Random(5)
    real = (FIXTURES / "corpus" / "engine-lines.txt").read_text(encoding="utf-8").splitlines()
    for name in ("constructed_content_change.log", "constructed_stack_regression.log"):
        text = (FIXTURES / "engine" / name).read_text(encoding="utf-8")
        real += [line for line in text.splitlines() if not line.startswith("#")]
    lines: list[str] = []
    for line in real:
        lines += [rng.choice(NOISE) for _ in range(rng.randrange(0, 6))]
        lines.append(line)
    path = tmp_path / "mixed.log"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.xfail(
    strict=True,
    reason="known gap, found 2026-11-29 once this test stopped comparing the scan with itself "
    "(it patched a name engine_records had bound at definition): a timed record without an "
    "anchor (an autotuner line) dates the timeless start-up lines after it only in the full "
    "read, and noise records between two NCCL lines change the crash grouping",
)
def test_scan_and_full_read_give_the_same_replay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = mixed_log(tmp_path)
    scanned = replay_docs(path, monkeypatch, anchor_lines)
    full = replay_docs(path, monkeypatch, every_line)
    assert len(full) > 100
    assert scanned == full


def test_parsing_in_the_workers_replays_like_the_scan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The default path (scanned and parsed in worker processes, streamed part by part, here
    one part per 4 KiB) replays exactly like parsing the scanned lines in this process."""
    path = mixed_log(tmp_path)
    scanned = replay_docs(path, monkeypatch, anchor_lines)
    assert len(scanned) > 100
    monkeypatch.setattr(engine_parts, "PARALLEL_FROM", 0)
    monkeypatch.setattr(engine_parts, "PART_BYTES", 4096)
    assert replay_docs(path, monkeypatch, None) == scanned


def test_parallel_parts_keep_line_numbers(tmp_path: Path) -> None:
    path = mixed_log(tmp_path)
    one = list(anchor_lines(path, workers=1))
    assert one
    import inferwatch.replay.engine_scan as scan

    old = scan.PARALLEL_FROM
    scan.PARALLEL_FROM = 0
    try:
        four = list(anchor_lines(path, workers=4))
    finally:
        scan.PARALLEL_FROM = old
    assert four == one
    text = path.read_bytes().split(b"\n")
    assert all(text[n - 1] == raw for n, raw in one)
