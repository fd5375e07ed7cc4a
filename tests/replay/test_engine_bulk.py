"""Cutting request-logging lines before the anchor search: exactly lines the parser rejects as
bulk, and positions and line numbers that still point into the file."""

from __future__ import annotations

import mmap
import random
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from inferwatch.parsers.engine import BULK_GATE, BULK_LONG, parse_engine_line
from inferwatch.replay.engine_bulk import Kept, cut_bulk, longer

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
    """The parser's bulk test, on the decoded line (as the scan workers decode it)."""
    head_has = any(
        line.find(m, 0, BULK_GATE) >= 0 for m in ("Received request", "Generated response")
    )
    return len(line) > BULK_LONG and head_has


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


@given(BYTES, st.integers(0, 700))
def test_a_prefix_never_decodes_to_more_characters_than_the_whole(raw: bytes, cut: int) -> None:
    assert len(raw[:cut].decode("utf-8", "replace")) <= len(raw.decode("utf-8", "replace"))


@given(BYTES)
def test_longer_is_the_parser_s_length_test(raw: bytes) -> None:
    line = b"x" * (BULK_LONG - 60) + raw
    assert longer(line, 0, len(line)) == (len(line.decode("utf-8", "replace")) > BULK_LONG)
    padded = b"\n" + line + b"\n"
    assert longer(padded, 1, len(padded) - 1) == longer(line, 0, len(line))


def test_lines_about_bulk_long_characters_of_multibyte_text_are_cut_by_their_characters(
    tmp_path: Path,
) -> None:
    """Lines of about ``BULK_LONG`` characters (most of them 401 to 1,603 bytes) are cut by
    their decoded length: ``数`` is three bytes, an invalid byte one character (U+FFFD)."""
    head = "Received request r: prompt: '"
    for chars in (BULK_LONG - 1, BULK_LONG, BULK_LONG + 1, BULK_LONG + 200):
        for fill in ("数", "ü", "\udcff", "a"):
            body = fill * (chars - len(head) - 1) + "ü"
            raw = (head + body).encode("utf-8", "surrogateescape") + b"\nnext\n"
            path = tmp_path / "log"
            path.write_bytes(raw)
            with _mapped(path) as mm:
                kept = cut_bulk(mm, 0, len(raw))
            assert (kept.text == b"next\n") is (chars > BULK_LONG), (chars, fill)


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
