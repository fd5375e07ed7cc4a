"""One entry point for inference-engine log lines: `parse_engine_line(line) -> EngineRecord | None`.

The line is stripped of its prefix (`engine_prefix`), then the message is dispatched on cheap,
bounded substring checks to the family parsers (`vllm`, `vllm_faults`, `vllm_startup`,
`sglang`); a family's regexes run only once its anchor text is present. Bulk request logging
("Received request …" with the whole prompt, often kilobytes) is rejected from the first few
hundred characters before any regex runs. None means "no record": the line is none of the
families of reference/engine.md. Pure and total: it never raises on any input.

`TracebackGrouper` (stateful, in `engine_grouper`) turns the per-line crash candidates into one
event per traceback block.
"""

from __future__ import annotations

from inferwatch.parsers.engine_grouper import TracebackGroup, TracebackGrouper
from inferwatch.parsers.engine_prefix import LinePrefix, split_prefix
from inferwatch.parsers.engine_records import (
    AccessLog,
    EngineCrash,
    EngineRecord,
    EngineStats,
    OtherLine,
    SpecDecode,
    StartupFact,
)
from inferwatch.parsers.sglang import parse_batch, parse_llamacpp_draft, parse_sglang_event
from inferwatch.parsers.vllm import parse_access, parse_spec, parse_stats
from inferwatch.parsers.vllm_faults import fallback_other, parse_fault
from inferwatch.parsers.vllm_startup import parse_startup

__all__ = [
    "AccessLog",
    "EngineCrash",
    "EngineRecord",
    "EngineStats",
    "LinePrefix",
    "OtherLine",
    "SpecDecode",
    "StartupFact",
    "TracebackGroup",
    "TracebackGrouper",
    "parse_engine_line",
    "parse_engine_message",
]

# Only this much of a message is searched for a family's anchor text.
_HEAD = 600
# Lines of more than BULK_LONG bytes (in UTF-8) are first checked for bulk request logging (a
# whole prompt or response) in their first BULK_GATE characters; replay's scanner cuts the same
# lines out of the raw file before it searches (``replay.engine_bulk``), from their sizes alone.
BULK_LONG = 400
BULK_GATE = 300
BULK_MARKERS = ("Received request", "Generated response")
# Per-request chatter that is never a record (checked at the start of the message).
_NOISE = (
    "Received request",
    "Added request",
    "Finished request",
    "Aborted request",
    "Generated response",
)


def parse_engine_line(line: str) -> EngineRecord | None:
    """Parse one engine log line (without or with its trailing newline); None = no record."""
    if _long(line) and (
        line.find(BULK_MARKERS[0], 0, BULK_GATE) >= 0
        or line.find(BULK_MARKERS[1], 0, BULK_GATE) >= 0
    ):
        return None
    prefix, body = split_prefix(line)
    return parse_engine_message(prefix, body)


def _long(line: str) -> bool:
    """Whether ``line`` takes more than ``BULK_LONG`` bytes in UTF-8. Its length decides for
    nearly every line (a character is one to four bytes; an ASCII string knows it is one);
    only a short non-ASCII line is encoded (lone surrogates as three bytes each)."""
    size = len(line)
    if size > BULK_LONG:
        return True
    return (
        4 * size > BULK_LONG
        and not line.isascii()
        and len(line.encode("utf-8", "surrogatepass")) > BULK_LONG
    )


def parse_engine_message(prefix: LinePrefix, body: str) -> EngineRecord | None:
    """Dispatch a message body whose prefix has already been split off."""
    head = body[:_HEAD]
    text = head.lstrip()
    if not text or text.startswith(_NOISE):
        return None
    record: EngineRecord | None = None
    if "HTTP/" in head:
        record = parse_access(prefix, text)
        if record is not None:
            return record
    if "SpecDecoding metrics: " in head or "Speculative metrics: " in head:
        record = parse_spec(prefix, body)
    elif "Avg prompt throughput" in head or "Prefix cache hit rate: GPU" in head:
        record = parse_stats(prefix, body)
    elif "Decode batch" in head or "Prefill batch" in head:
        record = parse_batch(prefix, body)
    elif "draft acceptance rate =" in head:
        record = parse_llamacpp_draft(prefix, body)
    if record is not None:
        return record
    return (
        parse_fault(prefix, body)
        or parse_startup(prefix, text)
        or parse_sglang_event(prefix, text)
        or fallback_other(prefix, body)
    )
