"""The two lines a busy vLLM V1 engine prints every ~10 s, read by one regular expression each.

``parse_stats`` and ``parse_spec`` read a line by field name (any order, optional and unknown
fields); that costs ~15 µs a line in Python, most of a replay's parsing. A line in exactly the
shape today's vLLM prints (reference/engine.md 2.1 and 3.1, Gen 3) is read here in a few µs
instead, into the same record; any other line, and any number not written as plain digits,
takes the general path. ``tests/parsers/test_vllm_fast.py`` holds the two paths equal.
"""

from __future__ import annotations

import re

from inferwatch.parsers.engine_prefix import LinePrefix
from inferwatch.parsers.engine_records import EngineStats, SpecDecode

_NUM = r"(\d+(?:\.\d+)?)"  # float() of these equals engine_records.to_float's, always finite
_END = r"[ .\t\r\n]*"  # what the general path strips from the line's end

_STATS = re.compile(
    r"(?:Engine (\d{1,8}): )?"  # the lead the general path finds within 32 characters
    rf"Avg prompt throughput: {_NUM} tokens/s, "
    rf"Avg generation throughput: {_NUM} tokens/s, Running: (\d+) reqs, Waiting: (\d+) reqs, "
    rf"GPU KV cache usage: {_NUM}%, Prefix cache hit rate: {_NUM}%{_END}"
)
_SPEC = re.compile(
    rf"SpecDecoding metrics: Mean acceptance length: {_NUM}, "
    rf"Accepted throughput: {_NUM} tokens/s, Drafted throughput: {_NUM} tokens/s, "
    r"Accepted: (\d+) tokens, Drafted: (\d+) tokens, "
    r"Per-position acceptance rate: (\d+(?:\.\d+)?(?:, \d+(?:\.\d+)?)*), "
    rf"Avg Draft acceptance rate: {_NUM}%{_END}"
)


def v1_stats(prefix: LinePrefix, body: str) -> EngineStats | None:
    """``[Engine NNN: ]Avg prompt throughput: …, Prefix cache hit rate: …%`` as V1 prints it
    without optional fields; None for any other shape."""
    m = _STATS.fullmatch(body)
    if m is None:
        return None
    engine, prompt, gen, running, waiting, kv, hit = m.groups()
    return EngineStats(
        prefix,
        "vllm_v1",
        dp_rank=None if engine is None else int(engine),
        prompt_tps=float(prompt),
        gen_tps=float(gen),
        running=int(running),
        waiting=int(waiting),
        kv_usage_pct=float(kv),
        prefix_cache_hit_pct=float(hit),
    )


def v1_spec(prefix: LinePrefix, body: str, at: int) -> SpecDecode | None:
    """A Gen 3 ``SpecDecoding metrics: …`` line from ``at`` (where its anchor starts) to the
    end; None for any other shape."""
    m = _SPEC.fullmatch(body, at)
    if m is None:
        return None
    mal, accepted_tps, drafted_tps, accepted, drafted, positions, rate = m.groups()
    per_position = tuple(map(float, positions.split(", ")))
    return SpecDecode(
        prefix,
        "vllm_v1_gen3",
        mal=float(mal),
        accepted=int(accepted),
        drafted=int(drafted),
        per_position=per_position,
        k=len(per_position),
        draft_acceptance_pct=float(rate),
        accepted_tps=float(accepted_tps),
        drafted_tps=float(drafted_tps),
    )
