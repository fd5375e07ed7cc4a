"""The engine-line corpus (tests/fixtures/corpus/engine-lines.*), fuzzing, and traceback grouping.

Comparison rules are the corpus README's: `prefix` keys that are present are checked, strings
exactly, numbers within a relative tolerance of 1e-6, lists element by element; the parser may
return more fields than the expectation lists.
"""

from __future__ import annotations

import json
import math
import pickle
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inferwatch.derive.engine.spec import line_mal
from inferwatch.parsers.engine import (
    EngineCrash,
    TracebackGroup,
    TracebackGrouper,
    parse_engine_line,
)
from inferwatch.parsers.engine_prefix import split_prefix
from inferwatch.parsers.engine_records import EngineRecord, SpecDecode

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "corpus"
LINES = (CORPUS / "engine-lines.txt").read_text(encoding="utf-8").split("\n")
EXPECT = [
    json.loads(row)
    for row in (CORPUS / "engine-lines.expect.jsonl").read_text(encoding="utf-8").splitlines()
    if row.strip()
]


def _same(want: Any, got: Any) -> bool:
    if want is None or isinstance(want, (str, bool)) or isinstance(got, bool):
        return bool(want == got)
    if isinstance(want, (int, float)):
        return isinstance(got, (int, float)) and math.isclose(want, got, rel_tol=1e-6)
    if isinstance(want, list):
        return (
            isinstance(got, list)
            and len(want) == len(got)
            and all(_same(w, g) for w, g in zip(want, got, strict=True))
        )
    return bool(want == got)


def _mismatches(expect: dict[str, Any], got: dict[str, Any]) -> list[str]:
    problems = []
    for key, want in expect.items():
        if key in ("line_no", "note"):
            continue
        if key == "prefix":
            for pkey, pwant in want.items():
                if pkey not in got["prefix"] or not _same(pwant, got["prefix"][pkey]):
                    problems.append(
                        f"prefix.{pkey}: want {pwant!r}, got {got['prefix'].get(pkey)!r}"
                    )
        elif key not in got or not _same(want, got[key]):
            problems.append(f"{key}: want {want!r}, got {got.get(key, '<missing>')!r}")
    return problems


def _corpus_fields(record: EngineRecord) -> dict[str, Any]:
    """The record as the corpus README states it: the parser reports the MAL a line prints;
    V0's, which no line prints, is derived from the line by the same function replay's line
    events use."""
    got = record.to_dict()
    if isinstance(record, SpecDecode):
        got["mal"] = line_mal(record)
    return got


def test_corpus_is_complete() -> None:
    assert len(EXPECT) == 85
    assert [e["line_no"] for e in EXPECT] == list(range(1, 86))
    assert len([line for line in LINES if line]) == 85


@pytest.mark.parametrize("expect", EXPECT, ids=[f"L{e['line_no']}" for e in EXPECT])
def test_corpus_line(expect: dict[str, Any]) -> None:
    line = LINES[expect["line_no"] - 1]
    record = parse_engine_line(line)
    assert record is not None, f"no record for {line!r}"
    got = _corpus_fields(record)
    assert got["type"] == record.type
    assert not _mismatches(expect, got), (line, _mismatches(expect, got))
    json.dumps(got)  # to_dict() is JSON-ready


def test_corpus_lines_with_trailing_newline_parse_the_same() -> None:
    for expect in EXPECT:
        line = LINES[expect["line_no"] - 1]
        first, second = parse_engine_line(line), parse_engine_line(line + "\n")
        assert first is not None
        assert second is not None
        assert first.to_dict() == second.to_dict()


def test_records_survive_pickling() -> None:
    """Replay's scan workers send records to the replay process by pickle."""
    for line in LINES:
        record = parse_engine_line(line)
        if record is not None:
            again = pickle.loads(pickle.dumps(record, protocol=pickle.HIGHEST_PROTOCOL))
            assert again == record
            assert type(again) is type(record)
            assert again.prefix == record.prefix


def test_records_and_prefixes_are_immutable_named_tuples() -> None:
    """Made and rebuilt from pickles in one step, not field by field (a frozen dataclass sets
    each field through ``object.__setattr__``), and as immutable."""
    for line in LINES:
        record = parse_engine_line(line)
        if record is None:
            continue
        for value in (record, record.prefix):
            assert isinstance(value, tuple)
            again = pickle.loads(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
            assert type(again) is type(value) and again == value
            with pytest.raises(AttributeError):
                value.format = "changed"  # type: ignore[misc,union-attr]


def test_spec_lines_obey_mal_arithmetic() -> None:
    """engine.md 3.2: sum(per-position) = MAL - 1 and rate = accepted / drafted (L3, L10)."""
    for number in (3, 10):
        record = parse_engine_line(LINES[number - 1])
        assert record is not None
        assert record.type == "spec_decode"
        assert record.per_position is not None
        assert record.mal is not None
        assert record.accepted is not None
        assert record.drafted is not None
        assert record.draft_acceptance_pct is not None
        assert math.isclose(sum(record.per_position), record.mal - 1, abs_tol=0.005)
        assert math.isclose(
            record.draft_acceptance_pct, 100 * record.accepted / record.drafted, abs_tol=0.05
        )


# ----------------------------------------------------------------------------- fuzzing

_ALPHABET = st.sampled_from(
    list("()[]:|-,.% =\"'`^\x1b\t ")
    + list("0123456789")
    + ["INFO", "ERROR", "WARNING", "pid=", "Engine 000: ", "TP0", "Error", "Traceback", "авг"]
    + ["Avg prompt throughput: ", "tokens/s", "Running: ", "SpecDecoding metrics: "]
    + ["Per-position acceptance rate: ", "Decode batch, ", "#running-req: ", 'HTTP/1.1" ']
    + ["Speculative metrics: ", "Number of speculative tokens: ", "nan", "9" * 5000]
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=300))
def test_random_text_never_raises(text: str) -> None:
    split_prefix(text)
    parse_engine_line(text)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_ALPHABET, max_size=40).map("".join))
def test_token_soup_never_raises(text: str) -> None:
    split_prefix(text)
    record = parse_engine_line(text)
    if record is not None:
        json.dumps(record.to_dict(), allow_nan=False)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from([line for line in LINES if line]),
    st.integers(min_value=0, max_value=2000),
    st.integers(min_value=0, max_value=40),
    st.text(max_size=12),
)
def test_mutated_corpus_lines_never_raise(line: str, at: int, cut: int, insert: str) -> None:
    at = at % (len(line) + 1)
    mutated = line[:at] + insert + line[at + cut :]
    split_prefix(mutated)
    parse_engine_line(mutated)
    parse_engine_line(line[:at])  # truncated
    parse_engine_line(line[at:])  # prefix lost


# ----------------------------------------------------------------------------- grouping


def _group(lines: list[str]) -> list[TracebackGroup]:
    grouper = TracebackGrouper()
    out: list[TracebackGroup] = []
    for number, line in enumerate(lines, start=1):
        out.extend(grouper.feed(parse_engine_line(line), number))
    out.extend(grouper.flush())
    return out


def test_illegal_memory_access_block_is_one_event() -> None:
    """L19 and its hint line L20 are one crash, not two; L21 opens a second incident."""
    groups = _group(LINES[18:21])
    assert [g.signature for g in groups] == ["illegal_memory_access", "startup_failed"]
    assert groups[0].exception == "torch.AcceleratorError"
    assert groups[0].line_count == 2
    assert all(g.incident for g in groups)


def test_dp_crash_sequence() -> None:
    """L31-L37 (one v0.9.1 DP=2 crash): engine-core fatal error with its root cause, then the
    API server's output_handler failure ending in EngineDeadError; stats and shutdown are not
    part of any block."""
    groups = _group(LINES[30:37])
    assert [(g.opener, g.signature, g.exception) for g in groups] == [
        ("fatal_error", "fatal_error", "AttributeError"),
        ("output_handler_failed", "engine_dead", "vllm.v1.engine.exceptions.EngineDeadError"),
    ]
    first = groups[0]
    assert first.root_cause is not None
    assert first.root_cause.startswith("'DPEngineCoreProc' object has no attribute")
    assert (first.prefix.proc, first.prefix.pid, first.first_line, first.last_line) == (
        "EngineCore_0",
        2651,
        3,
        4,
    )
    assert all(g.incident for g in groups)
    assert groups[0].to_dict()["line"] == 3


# Built from the formats in engine.md 1.3/1.6/5.1, not captured: a multiprocessing traceback
# under an engine-core tag with a chained exception, interleaved with the API server's lines.
_CHAINED = [
    "(EngineCore_DP0 pid=7) ERROR 01-02 03:04:05 [core.py:700] EngineCore encountered a fatal error.",
    "(EngineCore_DP0 pid=7) ERROR 01-02 03:04:05 [core.py:700] Traceback (most recent call last):",
    '(EngineCore_DP0 pid=7) ERROR 01-02 03:04:05 [core.py:700]   File "/x/core.py", line 1, in run',
    '(APIServer pid=1) INFO:     127.0.0.1:1 - "GET /health HTTP/1.1" 200 OK',
    "(EngineCore_DP0 pid=7) ERROR 01-02 03:04:05 [core.py:700]     self.step()",
    "(EngineCore_DP0 pid=7) ERROR 01-02 03:04:05 [core.py:700] torch.AcceleratorError: CUDA error: "
    "an illegal memory access was encountered",
    "(EngineCore_DP0 pid=7) ERROR 01-02 03:04:05 [core.py:700] ",
    "(EngineCore_DP0 pid=7) ERROR 01-02 03:04:05 [core.py:700] The above exception was the direct "
    "cause of the following exception:",
    "(EngineCore_DP0 pid=7) ERROR 01-02 03:04:05 [core.py:700] ",
    "(EngineCore_DP0 pid=7) ERROR 01-02 03:04:05 [core.py:700] Traceback (most recent call last):",
    '(EngineCore_DP0 pid=7) ERROR 01-02 03:04:05 [core.py:700]   File "/x/core.py", line 9, in f',
    "(EngineCore_DP0 pid=7) ERROR 01-02 03:04:05 [core.py:700] RuntimeError: Worker failed with "
    "error 'boom', please check the stack trace above for the root cause",
    "(APIServer pid=1) ERROR 01-02 03:04:06 [async_llm.py:1] AsyncLLM output_handler failed.",
]


def test_chained_traceback_interleaved_with_other_processes() -> None:
    groups = _group(_CHAINED)
    assert len(groups) == 2
    crash = groups[0]
    assert crash.opener == "fatal_error"
    assert crash.signature == "illegal_memory_access"  # the specific fault named in the block
    assert crash.exception == "RuntimeError"  # the final exception line is the root cause
    assert crash.root_cause is not None
    assert crash.root_cause.startswith("Worker failed with error 'boom'")
    assert (crash.first_line, crash.last_line) == (1, 12)
    assert groups[1].signature == "output_handler_failed"
    assert groups[1].root_cause is None


def test_lines_without_an_anchor_move_no_block() -> None:
    """An access-log line or a warning between two keyless NCCL lines neither closes the block
    nor counts toward its gap (replay's scanner may not deliver them); uvicorn's shutdown line
    has an anchor and closes it."""
    nccl = (
        "[rank0]:[E ProcessGroupNCCL.cpp:563] [Rank 0] Watchdog caught collective operation timeout"
    )
    lines = [
        nccl,
        'INFO:     127.0.0.1:52460 - "POST /v1/chat/completions HTTP/1.1" 200 OK',
        "/x/torch/foo.py:12: UserWarning: careful",
        nccl,
        "INFO:     Shutting down",
        nccl,
    ]
    groups = _group(lines)
    assert [(g.first_line, g.last_line, g.line_count) for g in groups] == [(1, 4, 2), (6, 6, 1)]


def test_code_lines_count_only_right_after_an_anchored_line() -> None:
    """The scanner always delivers the line after a hit, not a second code line or a caret line
    after it, nor code separated from its File line by another process's line."""
    lines = [
        "Traceback (most recent call last):",
        '  File "/x/a.py", line 3, in f',
        "    return g(",
        "           ^^",
        '  File "/x/b.py", line 9, in g',
        '(APIServer pid=1) INFO:     127.0.0.1:1 - "GET /health HTTP/1.1" 200 OK',
        "    raise ValueError",
        "ValueError: bad",
        "/x/torch/foo.py:12: UserWarning: careful",
        "  warnings.warn(",
    ]
    (group,) = _group(lines)
    assert (group.first_line, group.last_line, group.line_count) == (1, 8, 5)


def test_request_error_is_not_an_incident() -> None:
    """A request error's traceback (format as in engine.md 5.1 item 5) is grouped but is not a
    crash incident."""
    lines = [
        "ERROR 10-29 01:14:23 [serving_chat.py:222] Error in preprocessing prompt inputs",
        "Traceback (most recent call last):",
        '  File "/x/serving_chat.py", line 205, in create_chat_completion',
        "    ) = await self._preprocess_chat(",
        "ValueError: This model's maximum context length is 32768 tokens.",
        "INFO 10-29 01:14:23 [logger.py:43] Added request chatcmpl-1.",
        "INFO 10-29 01:14:24 [logger.py:43] Added request chatcmpl-2.",
    ]
    grouper = TracebackGrouper()
    groups: list[TracebackGroup] = []
    for number, line in enumerate(lines, start=1):
        groups.extend(grouper.feed(parse_engine_line(line), number))
    assert len(groups) == 1  # closed a couple of lines after its final exception, no flush
    assert (groups[0].opener, groups[0].signature, groups[0].incident) == (
        "request_error",
        "exception",
        False,
    )
    assert grouper.flush() == []


def test_lone_died_unexpectedly_is_an_incident_without_traceback() -> None:
    line = (  # template from engine.md 5.1, not captured
        "(APIServer pid=1) ERROR 12-01 23:08:02 [core_client.py:564] Engine core proc "
        "EngineCore_DP0 died unexpectedly, shutting down client."
    )
    record = parse_engine_line(line)
    assert isinstance(record, EngineCrash)
    assert record.engine_proc == "EngineCore_DP0"
    groups = _group([line])
    assert [(g.signature, g.incident, g.root_cause) for g in groups] == [
        ("engine_died", True, None)
    ]


def test_stray_traceback_fragment_produces_nothing() -> None:
    assert _group([LINES[21], LINES[64], LINES[19]]) == []
