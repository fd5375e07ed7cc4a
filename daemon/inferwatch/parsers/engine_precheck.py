"""Every anchor text the engine parsers dispatch on, for scanning whole files at once.

A line can become a record replay uses (stats, speculative decoding, start-up, crash and
traceback lines) only if it contains one of these texts; replay's file scanner searches big
blocks for them with RE2 and hands only the lines around a hit to ``parse_engine_line``. The
list is built from the parsers' own tables, so a new anchor there is scanned for here too.

A few records come from lines without an anchor (:func:`unanchored`): the scanner delivers those
only when they sit right after a hit, so nothing replay derives may depend on them elsewhere.
"""

from __future__ import annotations

import re

from inferwatch.parsers import vllm_faults, vllm_startup
from inferwatch.parsers.engine_records import AccessLog, EngineRecord, OtherLine
from inferwatch.parsers.sglang import READY_ANCHOR

DISPATCH = (
    "Avg prompt throughput",
    "Prefix cache hit rate: GPU",
    "SpecDecoding metrics",
    "Speculative metrics",
    "Decode batch",
    "Prefill batch",
    "draft acceptance rate =",
)
# Exception lines ("SomethingError: ...") and multiprocessing's "Process EngineCore:" header.
GENERIC = ("Error", "Exception", "Failed", "Process ")

ENGINE_KEYWORDS: tuple[str, ...] = tuple(
    sorted(
        {
            *DISPATCH,
            *GENERIC,
            READY_ANCHOR,
            *vllm_startup.ANCHORS,
            *vllm_faults.ANCHORS,
        }
    )
)
PATTERN_BYTES = "|".join(re.escape(k) for k in ENGINE_KEYWORDS).encode()
# How far into a line an anchor can sit and still be seen by the parsers (prefix + 600).
HEAD_LIMIT = 1000

_BYSTANDER_KINDS = frozenset({"warning", "foreign_format"})


def unanchored(record: EngineRecord) -> bool:
    """Whether ``record`` can come from a line without an anchor, one the scanner may skip: an
    access-log line, a warning, another library's line, or indented traceback code."""
    if isinstance(record, AccessLog):
        return True
    return isinstance(record, OtherLine) and (
        record.kind in _BYSTANDER_KINDS or traceback_code(record)
    )


def bystander(record: EngineRecord) -> bool:
    """Whether nothing derived from an engine log reads ``record``: a record without an anchor
    that is not traceback code (access logs, warnings, other libraries' lines). Replay drops
    them where they are parsed, so a scanned replay and a full read see the same records."""
    return unanchored(record) and not traceback_code(record)


def traceback_code(record: EngineRecord) -> bool:
    """Whether ``record`` is a traceback's indented code line (``fallback_other``): a traceback
    line that is no File line, header or chain line of its own."""
    return (
        isinstance(record, OtherLine)
        and record.kind == "traceback"
        and not record.text.startswith(vllm_faults.TRACEBACK_STARTS)
        and vllm_faults.PROCESS_HEADER.match(record.text) is None
    )
