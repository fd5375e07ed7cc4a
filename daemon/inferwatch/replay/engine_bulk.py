"""A part of an engine log with its request-logging lines cut out, before the anchor search.

With request logging on, vLLM writes each prompt into the log ("Received request …: prompt:
'…'"), and those lines hold most of a busy engine's log bytes. ``parse_engine_line`` rejects
them from their head (a marker within ``BULK_GATE`` characters of a line of more than
``BULK_LONG`` bytes in UTF-8), so no anchor inside them can ever become a record. :func:`cut_bulk`
finds them with plain substring searches (the prompt text itself is skipped at memchr speed), and
the RE2 anchor search runs over the rest, joined. A line is cut only when its bytes prove the
parser's test: the marker ends within ``BULK_GATE`` bytes of the line's start (a character is at
least one byte), and the line has more than ``BULK_LONG`` bytes (decoded as replay decodes it and
encoded again it has at least as many: a valid sequence keeps its bytes, and an undecodable run
of one to three bytes becomes U+FFFD, three). Its size alone decides: no line is decoded here.

:class:`Kept` maps positions in the joined text back to the file and counts the part's lines
(each cut line was exactly one line, its newline included).
"""

from __future__ import annotations

import mmap
import re
from bisect import bisect_right
from dataclasses import dataclass
from itertools import accumulate
from operator import itemgetter

import re2

from inferwatch.parsers.engine import BULK_GATE, BULK_LONG, BULK_MARKERS

_MARKERS = tuple(m.encode() for m in BULK_MARKERS)
# A marker is first searched for this far (request lines come every few KiB): CPython searches
# a window under 30,000 bytes for a short needle without the two-way method's set-up per call.
_NEAR = 16 << 10


@dataclass(slots=True)
class Kept:
    """The kept text of ``[start, end)`` (a copy: RE2 and ``bytes.count`` run over it)."""

    text: bytes
    file_starts: list[int]  # where each kept region starts in the file
    text_starts: list[int]  # and in ``text``
    mm: mmap.mmap  # the whole file (lines past the part's end are counted there)
    end: int  # the part's end in the file
    _at: int = 0  # the text position counted up to, and the newlines before it
    _newlines: int = 0

    def to_file(self, pos: int) -> int:
        """The file offset of text position ``pos``."""
        k = bisect_right(self.text_starts, pos) - 1
        return self.file_starts[k] + pos - self.text_starts[k]

    def lines_before(self, file_pos: int) -> int:
        """Lines from the part's start to ``file_pos``, a line start at or after the last one
        asked for (the part's end, or beyond it: context runs into the next part)."""
        if file_pos > self.end:
            past = self.mm[self.end : file_pos].count(b"\n")  # a few context lines at most
            return self.lines_before(self.end) + past
        k = bisect_right(self.file_starts, file_pos) - 1
        pos = self.text_starts[k] + file_pos - self.file_starts[k]
        if k + 1 < len(self.text_starts):
            pos = min(pos, self.text_starts[k + 1])  # a cut line's start: the region's end
        if pos > self._at:
            self._newlines += self.text.count(b"\n", self._at, pos)
            self._at = pos
        return self._newlines + k  # one newline per cut line before region k


def cut_bulk(mm: mmap.mmap, start: int, end: int) -> Kept:
    """``[start, end)`` of the file without the request-logging lines the parser rejects."""
    cuts = _bulk_lines(mm, start, end)
    file_starts = [start, *map(itemgetter(1), cuts)]  # kept regions: between the cuts
    stops = [*map(itemgetter(0), cuts), end]
    pieces = [mm[a:b] for a, b in zip(file_starts, stops, strict=True)]
    text_starts = [0, *accumulate(map(len, pieces[:-1]))]
    return Kept(b"".join(pieces), file_starts, text_starts, mm, end)


def _bulk_lines(mm: mmap.mmap, start: int, end: int) -> list[tuple[int, int]]:
    """``(line start, next line's start)`` of every line to cut, in file order."""
    found = [lines for m in _MARKERS if (lines := _lines_with(mm, start, end, m))]
    if len(found) == 1:
        return found[0]
    return sorted({line for lines in found for line in lines})  # a line may hold both


def _lines_with(mm: mmap.mmap, start: int, end: int, marker: bytes) -> list[tuple[int, int]]:
    """The long lines whose first ``marker`` ends within ``BULK_GATE`` bytes of their start.
    (Once per request line of a busy log: the loop body is kept to a few C calls.)"""
    out: list[tuple[int, int]] = []
    add = out.append
    find, rfind = mm.find, mm.rfind
    reach = BULK_GATE + 1 - len(marker)  # the furthest a line's start may lie before the marker
    inside = start + reach  # a marker from here on has its line's start searched for in the part
    far = re2.compile(re.escape(marker))
    pos = start
    while True:
        near = pos + _NEAR
        hit = find(marker, pos, near if near < end else end)  # request lines come every few KiB
        if hit < 0:
            if near >= end:
                return out
            # RE2's memchr-driven search is several times faster over megabytes (a marker this
            # log rarely or never writes)
            found = far.search(mm, near - len(marker) + 1, end)
            if found is None:
                return out
            hit = found.start()
        line_end = find(b"\n", hit, end)
        if line_end < 0:
            return out  # the part's last line has no newline: it stays
        pos = line_end + 1  # a later marker on the same line decides nothing
        if hit >= inside:
            line_start = rfind(b"\n", hit - reach, hit) + 1
            if not line_start:
                continue  # the line starts too far before the marker
        else:  # near the part's start: its first line starts there
            line_start = rfind(b"\n", start, hit) + 1 or start
        if line_end - line_start > BULK_LONG:
            add((line_start, pos))
