"""Every anchor text the engine parsers dispatch on, for scanning whole files at once.

A line can become a record replay uses (stats, speculative decoding, start-up, crash and
traceback lines) only if it contains one of these texts; replay's file scanner searches big
blocks for them with RE2 and hands only the lines around a hit to ``parse_engine_line``. The
list is built from the parsers' own tables, so a new anchor there is scanned for here too.
"""

from __future__ import annotations

import re

from inferwatch.parsers.sglang import _READY
from inferwatch.parsers.vllm_faults import _CRASH_ANCHORS, _OTHER_ANCHORS, _TRACEBACK_STARTS
from inferwatch.parsers.vllm_startup import _FIXED, _HANDLERS

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
            _READY,
            *(anchor for anchor, _ in _FIXED),
            *(anchor for anchor, _ in _HANDLERS),
            *(anchor for anchor, _ in _CRASH_ANCHORS),
            *(anchor for anchor, _ in _OTHER_ANCHORS),
            *_TRACEBACK_STARTS,
        }
    )
)
PATTERN_BYTES = "|".join(re.escape(k) for k in ENGINE_KEYWORDS).encode()
# How far into a line an anchor can sit and still be seen by the parsers (prefix + 600).
HEAD_LIMIT = 1000
