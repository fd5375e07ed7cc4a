"""Whole-line conveniences the kernel parser tests use; the daemon itself never needs them.

Production code strips a line's prefix once (``parse_kernel_line``, which also joins
continuations) and hands the message to ``parse_gpu_message`` / ``parse_misc_message``; these
helpers do both steps for a single fixture line.
"""

from __future__ import annotations

import re

from inferwatch.parsers.kernel import parse_kernel_line
from inferwatch.parsers.kernel_misc import MiscRecord, might_be_misc, parse_misc_message
from inferwatch.parsers.kernel_precheck import GPU_KEYWORDS, MISC_KEYWORDS
from inferwatch.parsers.xid import GpuRecord, might_be_gpu_record, parse_gpu_message

_INTERESTING = re.compile("|".join(re.escape(k) for k in GPU_KEYWORDS + MISC_KEYWORDS))


def parse_gpu_line(line: str) -> GpuRecord | None:
    """Strip the line's prefix and parse its message; continuation lines give None."""
    if not might_be_gpu_record(line):
        return None
    parsed = parse_kernel_line(line)
    return None if parsed.continuation else parse_gpu_message(parsed.message)


def parse_misc_line(line: str) -> MiscRecord | None:
    """Strip the line's prefix and parse its message."""
    if not might_be_misc(line):
        return None
    parsed = parse_kernel_line(line)
    return None if parsed.continuation else parse_misc_message(parsed.message)


def might_be_kernel_record(text: str) -> bool:
    """False means no kernel parser can match ``text`` (the chunk pre-check, per line)."""
    return _INTERESTING.search(text) is not None
