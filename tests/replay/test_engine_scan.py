"""The parallel anchor scan finds every line the engine pipeline needs: replay over the scanned
lines gives the same events as replay over every line of the file."""

from __future__ import annotations

import asyncio
import io
import json
import mmap
import os
import random
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future
from datetime import UTC
from pathlib import Path

import pytest

import inferwatch.replay.engine_scan as scan
from inferwatch.replay import engine_parts, engine_scan, timeline
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

# Lines whose records the scan may skip, next to ones it delivers: a timed warning and another
# library's timed line before timeless start-up lines, a Python warning's code line, uvicorn's
# shutdown, prefixed and bare tracebacks with second code lines and caret lines.
EDGES = [
    "WARNING 03-04 05:06:07 [config.py:1] something odd",
    "Memory profiling results: total_gpu_memory=23.58GiB kv_cache_size=2.89GiB "
    "gpu_memory_utilization=0.90",
    "(EngineCore pid=7476) 2026-03-04 06:00:00,000 - INFO - autotuner.py:824 - tuning",
    "Maximum concurrency for 29000 tokens per request: 0.82x",
    "/x/torch/foo.py:12: UserWarning: careful",
    "  warnings.warn(",
    "[rank1]:[E ProcessGroupNCCL.cpp:563] [Rank 1] Watchdog caught collective operation timeout: "
    "WorkNCCL(SeqNum=1, OpType=ALLREDUCE) ran for 600086 milliseconds before timing out.",
    "INFO:     Shutting down",
    "(EngineCore_DP0 pid=7) ERROR 03-04 06:00:05 [core.py:700] EngineCore encountered a fatal "
    "error.",
    "(EngineCore_DP0 pid=7) ERROR 03-04 06:00:05 [core.py:700] Traceback (most recent call last):",
    '(EngineCore_DP0 pid=7) ERROR 03-04 06:00:05 [core.py:700]   File "/x/core.py", line 1, in run',
    "(EngineCore_DP0 pid=7) ERROR 03-04 06:00:05 [core.py:700]     self.step(",
    "(EngineCore_DP0 pid=7) ERROR 03-04 06:00:05 [core.py:700]     ^^^^^^^^^^",
    "(EngineCore_DP0 pid=7) ERROR 03-04 06:00:05 [core.py:700] RuntimeError: CUDA error: an "
    "illegal memory access was encountered",
    "Traceback (most recent call last):",
    '  File "/x/a.py", line 3, in f',
    "    return g(",
    "           ^^",
    "ValueError: bad",
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

    asyncio.run(replay.run())
    doc, _ = replay.summary()
    doc.pop("records")
    return sorted([*out.getvalue().splitlines(), json.dumps(doc, sort_keys=True)])


def mixed_log(tmp_path: Path) -> Path:
    """The public corpus, the constructed logs and the edge lines, shuffled between bulk request
    logging."""
    rng = random.Random(5)
    real = (FIXTURES / "corpus" / "engine-lines.txt").read_text(encoding="utf-8").splitlines()
    for name in ("constructed_content_change.log", "constructed_stack_regression.log"):
        text = (FIXTURES / "engine" / name).read_text(encoding="utf-8")
        real += [line for line in text.splitlines() if not line.startswith("#")]
    real += EDGES
    lines: list[str] = []
    for line in real:
        lines += [rng.choice(NOISE) for _ in range(rng.randrange(0, 6))]
        lines.append(line)
    path = tmp_path / "mixed.log"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_scan_and_full_read_give_the_same_replay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = mixed_log(tmp_path)
    scanned = replay_docs(path, monkeypatch, anchor_lines)
    full = replay_docs(path, monkeypatch, every_line)
    assert len(full) > 100
    assert scanned == full


def test_edge_lines_next_to_each_other_replay_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without noise between them the edge lines sit right after hits: the lines the scan takes
    as context must count exactly as they do in a full read."""
    path = tmp_path / "edges.log"
    path.write_text("\n".join([*EDGES, NOISE[0], *EDGES]) + "\n", encoding="utf-8")
    scanned = replay_docs(path, monkeypatch, anchor_lines)
    assert scanned == replay_docs(path, monkeypatch, every_line)
    docs = [json.loads(d) for d in scanned]
    crashes = [d for d in docs if d.get("type") == "engine_crash"]
    # One chain of both copies, each the NCCL line and two tracebacks without their caret
    # lines (5 and 4 lines).
    assert [c["line_count"] for c in crashes] == [20]


def test_timeless_lines_take_the_last_anchored_time(tmp_path: Path) -> None:
    """A warning's or another library's line is no replay input (the scanner may skip it), so
    its time dates nothing: the timeless start-up line after them takes the time of the
    anchored line before them."""
    path = tmp_path / "dating.log"
    path.write_text("\n".join([EDGES[8], EDGES[0], EDGES[2], EDGES[1]]) + "\n", encoding="utf-8")
    ctx = TimeContext(year=2026, tz=UTC)
    records = list(timeline.engine_records(path, 0, ctx, "x", every_line))
    assert [r.line for r in records] == [1, 4]
    fatal, memory = (r.at for r in records)
    assert memory == fatal


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

    old = scan.PARALLEL_FROM
    scan.PARALLEL_FROM = 0
    try:
        four = list(anchor_lines(path, workers=4))
    finally:
        scan.PARALLEL_FROM = old
    assert four == one
    text = path.read_bytes().split(b"\n")
    assert all(text[n - 1] == raw for n, raw in one)


def test_the_replay_scans_parts_no_worker_has_started(tmp_path: Path) -> None:
    """While the next part is not ready, the replay process takes queued parts from the back
    and scans them itself; the parts still come out in file order, as the workers give them."""

    path = mixed_log(tmp_path)
    size = path.stat().st_size
    key = engine_parts._Key.of(path, 2026, UTC, True)
    with path.open("rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        parts = engine_scan.cut_parts(mm, size, 5)
    assert len(parts) == 5
    expected = [engine_parts._parse_part(*key.args(a, b)) for a, b in parts]
    scan = engine_parts._Scan.__new__(engine_parts._Scan)
    never_started: list[Future[engine_parts.PartResult]] = [Future() for _ in parts]
    scan.pending = deque(
        engine_parts._Job(key.args(a, b), f) for (a, b), f in zip(parts, never_started, strict=True)
    )
    scan.jobs = iter(())
    assert list(scan.results()) == expected
    assert all(f.cancelled() for f in never_started)  # every part was scanned here


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs")
def test_the_workers_leave_a_core_to_the_replay(tmp_path: Path) -> None:
    """The scan's workers run on every CPU the replay may use but one, and the replay itself
    stays free to run anywhere (its core is only kept clear of its own workers)."""
    path = mixed_log(tmp_path)
    before = os.sched_getaffinity(0)
    key = engine_parts._Key.of(path, 2026, UTC, True)
    with path.open("rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        parts = engine_scan.cut_parts(mm, path.stat().st_size, 4)
    scan = engine_parts._Scan(key, parts, 2)
    try:
        results = list(scan.results())
        workers = list(scan.pool._processes or {})  # started by the first parts
        assert workers
        placed = {frozenset(os.sched_getaffinity(pid)) for pid in workers}
    finally:
        scan.close()
    assert placed == {frozenset(sorted(before)[1:])}
    assert os.sched_getaffinity(0) == before
    assert results == [engine_parts._parse_part(*key.args(a, b)) for a, b in parts]
