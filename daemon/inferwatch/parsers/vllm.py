"""vLLM stats, speculative-decoding and uvicorn access lines (reference/engine.md 1.7, 2, 3).

Lines are read by field **name**, never by position: the parts of a stats or SpecDecoding line are
split on `, ` and looked up in a table, so optional fields inserted in the middle (Deferred,
Preemptions) or appended (MM cache hit rate) and unknown new fields are all tolerated. Start-up
facts live in `vllm_startup`, crash and fault signatures in `vllm_faults`. Pure functions: the
message body in (after `engine_prefix.split_prefix`), a record or None out; they never raise.
"""

from __future__ import annotations

import re

from inferwatch.parsers.engine_prefix import LinePrefix
from inferwatch.parsers.engine_records import (
    AccessLog,
    EngineStats,
    SpecDecode,
    to_float,
    to_int,
)
from inferwatch.parsers.vllm_fast import v1_spec, v1_stats

__all__ = ["parse_access", "parse_spec", "parse_stats"]


# ---------------------------------------------------------------------------- stats (2.1)

_STATS_FLOAT = {
    "Avg prompt throughput": "prompt_tps",
    "Avg generation throughput": "gen_tps",
    "GPU KV cache usage": "kv_usage_pct",
    "CPU KV cache usage": "cpu_kv_usage_pct",
    "Prefix cache hit rate": "prefix_cache_hit_pct",
    "External prefix cache hit rate": "external_prefix_cache_hit_pct",
    "MM cache hit rate": "mm_cache_hit_pct",
}
_STATS_INT = {
    "Running": "running",
    "Waiting": "waiting",
    "Pending": "waiting",
    "Swapped": "swapped",
    "Deferred": "deferred",
    "Preemptions": "preemptions",
    "Corrupted": "corrupted",
}
_V0_KEYS = frozenset({"Pending", "Swapped", "CPU KV cache usage"})
_LEAD = re.compile(r"(?:Engine (\d+)|(\d+) Engines? Aggregated): ?$")
_V0_PREFIX_CACHE = re.compile(r"Prefix cache hit rate: GPU: ([^\s,%]+)%?, CPU: ([^\s,%]+)%?")


def parse_stats(prefix: LinePrefix, body: str) -> EngineStats | None:
    """`[Engine NNN: | N Engines Aggregated: ]Avg prompt throughput: …` (V0 and V1), or V0's
    separate `Prefix cache hit rate: GPU: …, CPU: …` line (format "vllm_v0_prefix_cache")."""
    fast = v1_stats(prefix, body)
    if fast is not None:
        return fast
    start = body.find("Avg prompt throughput")
    if start < 0:
        return _parse_v0_prefix_cache(prefix, body)
    gen = body.find("Avg generation throughput", 0, start)
    if gen >= 0:  # fields are found by name, whatever their order
        start = gen
    floats: dict[str, float] = {}
    ints: dict[str, int] = {}
    v0 = False
    for part in body[start:].rstrip(" .\t\r\n").split(", "):
        key, sep, text = part.partition(": ")
        if not sep:
            continue
        v0 = v0 or key in _V0_KEYS
        name = _STATS_FLOAT.get(key)
        if name is not None:
            number = to_float(text)
            if number is not None:
                floats.setdefault(name, number)
            continue
        name = _STATS_INT.get(key)
        count = to_int(text) if name is not None else None
        if name is not None and count is not None:
            ints.setdefault(name, count)
    if "prompt_tps" not in floats and "gen_tps" not in floats:
        return None
    dp_rank = aggregated = None
    lead = _LEAD.search(body, max(0, start - 32), start)
    if lead is not None:
        dp_rank = to_int(lead.group(1) or "")
        aggregated = to_int(lead.group(2) or "")
    return EngineStats(
        prefix,
        "vllm_v0" if v0 else "vllm_v1",
        dp_rank=dp_rank,
        prompt_tps=floats.get("prompt_tps"),
        gen_tps=floats.get("gen_tps"),
        running=ints.get("running"),
        waiting=ints.get("waiting"),
        kv_usage_pct=floats.get("kv_usage_pct"),
        prefix_cache_hit_pct=floats.get("prefix_cache_hit_pct"),
        swapped=ints.get("swapped"),
        cpu_kv_usage_pct=floats.get("cpu_kv_usage_pct"),
        deferred=ints.get("deferred"),
        preemptions=ints.get("preemptions"),
        corrupted=ints.get("corrupted"),
        external_prefix_cache_hit_pct=floats.get("external_prefix_cache_hit_pct"),
        mm_cache_hit_pct=floats.get("mm_cache_hit_pct"),
        aggregated_engines=aggregated,
    )


def _parse_v0_prefix_cache(prefix: LinePrefix, body: str) -> EngineStats | None:
    m = _V0_PREFIX_CACHE.search(body)
    if m is None:
        return None
    return EngineStats(
        prefix,
        "vllm_v0_prefix_cache",
        prefix_cache_hit_pct=to_float(m.group(1)),
        cpu_prefix_cache_hit_pct=to_float(m.group(2)),
    )


# ---------------------------------------------------------------------- spec decode (3.1)

_SPEC_FLOAT = {
    "Mean acceptance length": "mal",
    "Accepted throughput": "accepted_tps",
    "Drafted throughput": "drafted_tps",
    "System efficiency": "system_efficiency",
}
_SPEC_INT = {
    "Accepted": "accepted",
    "Drafted": "drafted",
    "Number of accepted tokens": "accepted",
    "Number of draft tokens": "drafted",
    "Number of draft tokens tokens": "drafted",  # early V0 really printed it twice
    "Number of emitted tokens": "emitted",
    "Number of emitted tokens tokens": "emitted",
    "Number of speculative tokens": "k",
}
_SPEC_RATES = frozenset({"Draft acceptance rate", "Avg Draft acceptance rate"})
_PER_POSITION = "Per-position acceptance rate"
_V1_ANCHOR = "SpecDecoding metrics: "
_V0_ANCHOR = "Speculative metrics: "


def _rate_pct(text: str) -> float | None:
    """`88.8%` → 88.8; a fraction `0.607` (V0, pre-Gen-1) → 60.7; `nan%` → None."""
    value = to_float(text)
    if value is None or text.strip().endswith("%"):
        return value
    return round(value * 100.0, 9)


def _is_bare_number(text: str) -> bool:
    token = text.strip()
    if not token or ":" in token or " " in token:
        return False
    try:
        float(token)
    except ValueError:
        return False
    return True


def _spec_format(v1: bool, keys: set[str]) -> str:
    if v1:
        if "Avg Draft acceptance rate" in keys:
            return "vllm_v1_gen3"
        if "Accepted throughput" in keys or "Drafted throughput" in keys:
            return "vllm_v1_transitional"
        if "Mean acceptance length" in keys or _PER_POSITION in keys:
            return "vllm_v1_gen2"
        return "vllm_v1_gen1"
    if keys & {"System efficiency", "Number of speculative tokens", "Number of emitted tokens",
               "Number of emitted tokens tokens"}:  # fmt: skip
        return "vllm_v0"
    return "vllm_v1_early"


def parse_spec(prefix: LinePrefix, body: str) -> SpecDecode | None:
    """`SpecDecoding metrics: …` (V1 Gen 1/2/3, transitional) or `Speculative metrics: …` (V0,
    V1 0.8.0 to 0.8.2). The per-position list is the run of bare numbers after its key."""
    at = body.find(_V1_ANCHOR)
    v1 = at >= 0
    if v1:
        fast = v1_spec(prefix, body, at)
        if fast is not None:
            return fast
        rest = body[at + len(_V1_ANCHOR) :]
    else:
        at = body.find(_V0_ANCHOR)
        if at < 0:
            return None
        rest = body[at + len(_V0_ANCHOR) :]
    parts = rest.rstrip(" ,.\t\r\n").split(", ")
    floats: dict[str, float] = {}
    ints: dict[str, int] = {}
    keys: set[str] = set()
    rate: float | None = None
    per_position: list[float | None] | None = None
    i = 0
    while i < len(parts):
        key, sep, text = parts[i].partition(": ")
        i += 1
        if not sep:
            continue
        keys.add(key)
        if key == _PER_POSITION:
            items = [text]
            while i < len(parts) and _is_bare_number(parts[i]):
                items.append(parts[i])
                i += 1
            per_position = [to_float(item) for item in items]
        elif key in _SPEC_RATES:
            rate = _rate_pct(text) if rate is None or key.startswith("Avg") else rate
        elif key in _SPEC_FLOAT:
            number = to_float(text)
            if number is not None:
                floats.setdefault(_SPEC_FLOAT[key], number)
        elif key in _SPEC_INT:
            count = to_int(text)
            if count is not None:
                ints.setdefault(_SPEC_INT[key], count)
    if not ({"accepted", "drafted"} & ints.keys()) and rate is None and "mal" not in floats:
        return None
    fmt = _spec_format(v1, keys)
    k = len(per_position) if per_position else ints.get("k")
    positions: tuple[float, ...] | None = None
    if per_position and all(p is not None for p in per_position):
        positions = tuple(p for p in per_position if p is not None)
    return SpecDecode(
        prefix,
        fmt,
        mal=floats.get("mal"),  # as printed; V0's is derived (derive.engine.spec.line_mal)
        accepted=ints.get("accepted"),
        drafted=ints.get("drafted"),
        per_position=positions,
        k=k,
        draft_acceptance_pct=rate,
        accepted_tps=floats.get("accepted_tps"),
        drafted_tps=floats.get("drafted_tps"),
        cumulative=fmt == "vllm_v0",
        emitted=ints.get("emitted"),
        system_efficiency=floats.get("system_efficiency"),
    )


# --------------------------------------------------------------------------- access (1.7)

_ACCESS = re.compile(r' - "([A-Z]+) (\S+) HTTP/[\d.]+" (\d{3})(?:\s|$)')


def parse_access(prefix: LinePrefix, body: str) -> AccessLog | None:
    """uvicorn `<ip>:<port> - "<METHOD> <path> HTTP/<ver>" <status> <reason>`."""
    dash = body.find(' - "', 0, 200)
    if dash <= 0:
        return None
    m = _ACCESS.match(body, dash)
    if m is None:
        return None
    client = body[:dash].rsplit(" ", 1)[-1]
    if not client:
        return None
    return AccessLog(prefix, client, m.group(1), m.group(2), int(m.group(3)))
