"""Cutting request-logging lines before the anchor search: exactly lines the parser rejects as
bulk (never one it would read), and positions and line numbers that still point into the file."""

from __future__ import annotations

import mmap
import random
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from inferwatch.parsers.engine import BULK_GATE, BULK_LONG, parse_engine_line
from inferwatch.replay.engine_bulk import Kept, cut_bulk

PREFIX = "INFO 10-29 01:09:12 [logger.py:43] "
WORDS = ["Error", "Traceback", "über", "数据", "a", "prompt", "\ufffd"]


def _line(rng: random.Random) -> str:
    kind = rng.randrange(6)
    body = " ".join(rng.choice(WORDS) for _ in range(rng.choice([5, 60, 150, 400, 900])))
    if kind == 0:
        return PREFIX + "Received request chatcmpl-1: prompt: '" + body + "'"
    if kind == 1:
        return PREFIX + "Generated response chatcmpl-1: output: '" + body + "'"
    if kind == 2:  # a marker too far into its line
        return PREFIX + "x" * rng.randrange(BULK_GATE - 40, BULK_GATE + 40) + "Received request"
    if kind == 3:  # both markers
        return PREFIX + "Generated response Received request " + body
    if kind == 4:
        return "Engine 000: Avg prompt throughput: 1.0 tokens/s, " + body[:100]
    return body


def _is_bulk(line: str) -> bool:
    """The parser's bulk test, on the decoded line (as the scan workers decode it): more than
    BULK_LONG bytes in UTF-8, a marker in the first BULK_GATE characters."""
    head_has = any(
        line.find(m, 0, BULK_GATE) >= 0 for m in ("Received request", "Generated response")
    )
    return len(line.encode("utf-8", "surrogatepass")) > BULK_LONG and head_has


@contextmanager
def _mapped(path: Path) -> Iterator[mmap.mmap]:
    with path.open("rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        yield mm


def test_cut_lines_are_exactly_long_bulk_lines_and_lines_keep_their_numbers(
    tmp_path: Path,
) -> None:
    rng = random.Random(11)
    for round_ in range(30):
        lines = [_line(rng) for _ in range(rng.randrange(1, 60))]
        newline_at_end = round_ % 2 == 1
        raw = "\n".join(lines).encode() + (b"\n" if newline_at_end else b"")
        path = tmp_path / f"log{round_}"
        path.write_bytes(raw)
        starts = [0]
        for line in lines[:-1]:
            starts.append(starts[-1] + len(line.encode()) + 1)
        with _mapped(path) as mm:
            kept = cut_bulk(mm, 0, len(raw))
            cut = {n for n, at in enumerate(starts) if not _kept(kept, at)}
            # The markers sit behind ASCII here, so bytes and characters agree on the gate:
            # every bulk line is cut, except a last line without its newline.
            expected = {n for n, line in enumerate(lines) if _is_bulk(line)}
            if not newline_at_end:
                expected.discard(len(lines) - 1)
            assert cut == expected
            assert all(parse_engine_line(lines[n]) is None for n in cut)
            for n, at in enumerate(starts):  # every line keeps its number, cut or not
                assert kept.lines_before(at) == n
            assert kept.lines_before(len(raw)) == raw.count(b"\n")


def _kept(kept: Kept, at: int) -> bool:
    """Whether the file position ``at`` lies in a kept region."""
    ends = [*kept.text_starts[1:], len(kept.text)]
    for first, text_start, text_end in zip(kept.file_starts, kept.text_starts, ends, strict=True):
        if first <= at < first + text_end - text_start:
            return True
    return False


def test_positions_map_back_to_the_file(tmp_path: Path) -> None:
    long_prompt = PREFIX + "Received request r: prompt: '" + "Error " * 400 + "'"
    lines = ["first Error", long_prompt, "Traceback (most recent call last):", long_prompt, "x"]
    raw = ("\n".join(lines) + "\n").encode()
    path = tmp_path / "log"
    path.write_bytes(raw)
    with _mapped(path) as mm:
        kept = cut_bulk(mm, 0, len(raw))
        assert kept.text == b"first Error\nTraceback (most recent call last):\nx\n"
        at = kept.text.index(b"Traceback")
        assert kept.to_file(at) == raw.index(b"Traceback")
        assert kept.to_file(kept.text.index(b"x\n")) == raw.rindex(b"x\n")
        assert [kept.lines_before(raw.index(t.encode())) for t in ("first", "Trace")] == [0, 2]


def test_a_part_counts_context_lines_past_its_end(tmp_path: Path) -> None:
    raw = b"a\nb\nc\nd\n"
    path = tmp_path / "log"
    path.write_bytes(raw)
    with _mapped(path) as mm:
        kept = cut_bulk(mm, 0, 4)  # the part is "a\nb\n"
        assert kept.lines_before(6) == 3  # "c" belongs to the next part: counted in the file
        assert kept.lines_before(4) == 2


def test_the_gate_is_exact_on_a_part_s_first_line(tmp_path: Path) -> None:
    """The marker must end within BULK_GATE characters, on the first line of a part (no
    newline before it to find) as on any other."""
    marker = "Received request"
    tail = " " + "prompt " * 400
    for pad, cut in ((BULK_GATE - len(marker), True), (BULK_GATE - len(marker) + 1, False)):
        line = "x" * pad + marker + tail
        assert _is_bulk(line) == cut
        raw = (line + "\nnext\n").encode()
        path = tmp_path / f"log{pad}"
        path.write_bytes(raw)
        with _mapped(path) as mm:
            kept = cut_bulk(mm, 0, len(raw))
            assert (kept.text == b"next\n") is cut


# Whole and cut UTF-8 characters of one to four bytes, stray continuation and invalid bytes.
PIECES = (b"a", b"\xc3\xbc", b"\xe6\x95\xb0", b"\xf0\x9f\x98\x80", b"\xe6", b"\x80", b"\xf0\x9f")
BYTES = st.binary(max_size=40) | st.lists(
    st.sampled_from((*PIECES, b"\xff", b"\xc3")), max_size=700
).map(b"".join)
HEAD = b"INFO 10-29 01:09:12 [logger.py:43] Received request r: prompt: '"


@given(BYTES, st.integers(0, 120))
def test_a_cut_line_of_any_bytes_is_one_the_parser_rejects(
    tmp_path_factory: pytest.TempPathFactory, raw: bytes, pad: int
) -> None:
    """Whatever its bytes, a line the scan cuts decodes (as replay decodes it) to a line the
    parser returns nothing for; a line of valid UTF-8 is cut exactly when the parser's bulk test
    holds (undecodable bytes only ever lengthen the decoded line: U+FFFD is three bytes)."""
    line = HEAD + b"a" * (BULK_LONG - len(HEAD) - 60 + pad) + raw.replace(b"\n", b"")
    path = tmp_path_factory.mktemp("bytes") / "log"
    path.write_bytes(line + b"\nnext\n")
    with _mapped(path) as mm:
        cut = cut_bulk(mm, 0, len(line) + 6).text == b"next\n"
    decoded = line.decode("utf-8", "replace")
    assert cut == (len(line) > BULK_LONG)
    if cut:
        assert _is_bulk(decoded)
        assert parse_engine_line(decoded) is None
    try:
        valid = line.decode("utf-8")
    except UnicodeDecodeError:
        return
    assert cut == _is_bulk(valid)


def test_lines_about_bulk_long_bytes_of_multibyte_text_are_cut_by_their_size(
    tmp_path: Path,
) -> None:
    """Lines of about ``BULK_LONG`` bytes are cut by their size in bytes, whatever their
    characters: ``数`` is three bytes, ``ü`` two, an invalid byte one (three once decoded)."""
    head = "Received request r: prompt: '"
    for size in (BULK_LONG - 1, BULK_LONG, BULK_LONG + 1, BULK_LONG + 2, BULK_LONG + 200):
        for fill in ("数", "ü", "\udcff", "a"):
            body = fill * ((size - len(head)) // len(fill.encode("utf-8", "surrogateescape")))
            raw = (head + body).encode("utf-8", "surrogateescape")
            raw += b"a" * (size - len(raw))
            assert len(raw) == size
            path = tmp_path / "log"
            path.write_bytes(raw + b"\nnext\n")
            with _mapped(path) as mm:
                kept = cut_bulk(mm, 0, len(raw) + 6)
            assert (kept.text == b"next\n") is (size > BULK_LONG), (size, fill)
            if size > BULK_LONG:
                assert parse_engine_line(raw.decode("utf-8", "replace")) is None


def test_parts_starting_anywhere_and_markers_far_apart(tmp_path: Path) -> None:
    """A part that starts at a later line (its first line has no newline before it in the
    part) and markers more than a search window apart (``_NEAR``: the rest of the part is
    searched by RE2) cut the same lines as the whole file does."""
    rng = random.Random(5)
    filler = "INFO 10-29 01:09:12 [loggers.py:1] " + "quiet " * 900  # ~5.4 KB, no marker
    for round_ in range(12):
        lines = [_line(rng) if rng.random() < 0.3 else filler for _ in range(rng.randrange(2, 40))]
        raw = ("\n".join(lines) + "\n").encode()
        path = tmp_path / f"far{round_}"
        path.write_bytes(raw)
        starts = [0]
        for line in lines:
            starts.append(starts[-1] + len(line.encode()) + 1)
        first = rng.randrange(len(lines))
        with _mapped(path) as mm:
            kept = cut_bulk(mm, starts[first], len(raw))
            cut = {n for n in range(first, len(lines)) if not _kept(kept, starts[n])}
        assert cut == {n for n in range(first, len(lines)) if _is_bulk(lines[n])}
