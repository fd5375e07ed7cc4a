"""Find the engine-log lines that matter in a big file, on every core, at memory speed.

Bulk request logging makes up most of an engine log's bytes. The file is memory-mapped and cut
at line boundaries into parts; in a worker process, each part loses the request-logging lines
the parser rejects anyway (:mod:`engine_bulk`), and the rest is searched by RE2 (linear time, one
pass for all anchors) for lines with an anchor near their start. :func:`anchor_lines` returns
those lines; ``engine_parts.anchor_records`` has the workers parse them too (the parsers are
pure) and yields the parts' records in file order as each part is done, so the replay consumes
the first parts while the workers still scan the last ones.
"""

from __future__ import annotations

import mmap
import multiprocessing
import os
from bisect import bisect_left
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from itertools import pairwise
from pathlib import Path
from typing import Any, TypeVar

import re2

from inferwatch.parsers.engine_precheck import HEAD_LIMIT, PATTERN_BYTES
from inferwatch.replay.engine_bulk import Kept, cut_bulk

PARALLEL_FROM = 32 << 20
CONTEXT_LINES = 64  # at most this many lines taken after one hit
_INDENT = (b" ", b"\t")  # smaller files are scanned in this process
Span = tuple[int, int, int]  # (line index in its part, line start, line end)
Item = TypeVar("Item", bound=tuple[Any, ...])  # a part's item: its line index first


def _scan_part(path: str, start: int, end: int) -> tuple[list[Span], int]:
    """``(line index within the part, start, end)`` of lines holding an anchor near their
    start in ``[start, end)``, and the number of lines in the part."""
    with Path(path).open("rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        return spans_in(mm, start, end)


def spans_in(mm: mmap.mmap, start: int, end: int) -> tuple[list[Span], int]:
    """What :func:`_scan_part` returns, over an open map."""
    pattern = re2.compile(PATTERN_BYTES)
    kept = cut_bulk(mm, start, end)  # RE2 never reads the prompts of request logging
    size = len(mm)  # context lines may run past the part's end; the parent drops repeats
    spans: list[Span] = []
    done = -1
    hits = [kept.to_file(match.start()) for match in pattern.finditer(kept.text)]
    for hit in hits:
        if hit <= done:
            continue
        line_start = max(mm.rfind(b"\n", start, hit) + 1, start)
        if hit - line_start > HEAD_LIMIT:
            done = _line_end(mm, hit, end)
            continue
        # The hit line, the indented lines continuing it (traceback code), and the next line:
        # the crash grouper counts code right after an anchored line, and nothing else without
        # an anchor (``engine_precheck.unanchored``). A next line with an anchor of its own is
        # a hit and gets the same treatment.
        pos = line_start
        while True:
            pos = _take(mm, pos, size, kept, spans)
            taken = 0
            while pos < size and mm[pos : pos + 1] in _INDENT and taken < CONTEXT_LINES:
                pos = _take(mm, pos, size, kept, spans)
                taken += 1
            if pos >= size:
                break
            head_end = min(_line_end(mm, pos, size), pos + HEAD_LIMIT)
            if pos >= end or not _hit_within(hits, pos, head_end):
                pos = _take(mm, pos, size, kept, spans)
                break
        done = pos - 1
    return spans, kept.lines_before(end)


def _hit_within(hits: list[int], start: int, end: int) -> bool:
    """Whether an anchor starts in ``[start, end)`` (a line's head, as for the hit lines)."""
    i = bisect_left(hits, start)
    return i < len(hits) and hits[i] < end


def _take(mm: mmap.mmap, pos: int, end: int, kept: Kept, spans: list[Span]) -> int:
    """Record the line starting at ``pos``; return the next line's start."""
    line_end = _line_end(mm, pos, end)
    spans.append((kept.lines_before(pos), pos, line_end))
    return line_end + 1


def _line_end(mm: mmap.mmap, pos: int, end: int) -> int:
    found = mm.find(b"\n", pos, end)
    return end if found < 0 else found


def cut_parts(mm: mmap.mmap, size: int, parts: int) -> list[tuple[int, int]]:
    bounds = [0]
    for k in range(1, parts):
        cut = mm.find(b"\n", size * k // parts)
        if cut < 0 or cut + 1 <= bounds[-1]:
            continue
        bounds.append(cut + 1)
    bounds.append(size)
    return [(a, b) for a, b in pairwise(bounds) if b > a]


def anchor_lines(path: Path, workers: int | None = None) -> Iterator[tuple[int, bytes]]:
    """``(1-based line number, raw line)`` for every line with an anchor, in file order."""
    size = path.stat().st_size
    if size == 0:
        return
    with path.open("rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        n = workers or (os.cpu_count() or 1)
        parts = cut_parts(mm, size, n if size >= PARALLEL_FROM else 1)
        if len(parts) == 1:
            results = [_scan_part(str(path), *parts[0])]
        else:
            context = multiprocessing.get_context("fork")
            with ProcessPoolExecutor(len(parts), mp_context=context) as pool:
                futures = [pool.submit(_scan_part, str(path), a, b) for a, b in parts]
                results = [f.result() for f in futures]
        for number, (_, a, b) in numbered(results):
            yield number, mm[a:b]


def numbered(parts: Iterable[tuple[Sequence[Item], int]]) -> Iterator[tuple[int, Item]]:
    """File line numbers (1-based) for the items of each part's ``(items, lines in the part)``,
    in order; an item's first member is its line's index within its part. A line taken twice
    (context running into the next part) comes once."""
    line_base, last = 1, 0
    for items, lines in parts:
        for item in items:
            number = line_base + item[0]
            if number > last:
                last = number
                yield number, item
        line_base += lines
