"""SGLang batch lines and readiness (reference/engine.md 7.1, 7.2) and llama.cpp's server log.

SGLang: `Decode batch[.|,] #running-req: …, gen throughput (token/s): …, #queue-req: …` and
`Prefill batch[.|,] #new-seq: …, #new-token: …, #cached-token: …, …` (older builds add
`cache hit rate: <f2>%`, the radix cache's hit rate), parsed by key so optional
parts (accept len/rate, cuda/cpu/npu graph, PD-disaggregation counters) and trailing `, ` are
fine. `accept len` is vLLM's mean acceptance length and goes to `mal`; `accept rate` changed
meaning across versions and is kept raw.

llama.cpp: engine.md section 8 documents /metrics (see `promtext`) and exactly one server log
line, the per-request speculative timing `draft acceptance rate = <f5> (<int> accepted / <int>
generated)`, which becomes a `SpecDecode` with format "llamacpp" (one request, not a window).
It documents no stats, start-up or crash lines for llama.cpp. Pure.
"""

from __future__ import annotations

import re

from inferwatch.parsers.engine_prefix import LinePrefix
from inferwatch.parsers.engine_records import (
    EngineStats,
    SpecDecode,
    StartupFact,
    to_float,
    to_int,
)

__all__ = ["READY_ANCHOR", "parse_batch", "parse_llamacpp_draft", "parse_sglang_event"]

_FLOAT_KEYS = {
    "token usage": "token_usage",
    "full token usage": "token_usage",
    "accept len": "mal",
    "accept rate": "accept_rate",
    "gen throughput (token/s)": "gen_tps",
    "input throughput (token/s)": "prompt_tps",
    "pre-allocated usage": "prealloc_usage",
    "cache hit rate": "prefix_cache_hit_pct",  # older prefill lines: the radix cache, percent
}
_INT_KEYS = {
    "#running-req": "running",
    "#token": "tokens_in_use",
    "#queue-req": "waiting",
    "#new-seq": "new_seqs",
    "#new-token": "new_tokens",
    "#cached-token": "cached_tokens",
    "#retracted-req": "retracted_reqs",
    "#prealloc-req": "prealloc_reqs",
    "#transfer-req": "transfer_reqs",
}
_GRAPH_KEYS = frozenset({"cuda graph", "cpu graph", "npu graph"})
_BOOLS = {"True": True, "False": False, "true": True, "false": False}


def parse_batch(prefix: LinePrefix, body: str) -> EngineStats | None:
    """An SGLang `Decode batch` or `Prefill batch` line; None when it carries no known field."""
    at = body.find("Decode batch")
    decode = at >= 0
    if not decode:
        at = body.find("Prefill batch")
        if at < 0:
            return None
    rest = body[at + (12 if decode else 13) :].lstrip(".,").strip().rstrip(",. ")
    floats: dict[str, float] = {}
    ints: dict[str, int] = {}
    graph: bool | None = None
    for part in rest.split(", "):
        key, sep, text = part.partition(": ")
        if not sep:
            continue
        key = key.strip()
        if key in _FLOAT_KEYS:
            number = to_float(text)
            if number is not None:
                floats.setdefault(_FLOAT_KEYS[key], number)
        elif key in _INT_KEYS:
            count = to_int(text)
            if count is not None:
                ints.setdefault(_INT_KEYS[key], count)
        elif key in _GRAPH_KEYS:
            graph = _BOOLS.get(text.strip(), graph)
    if not floats and not ints:
        return None
    usage = floats.get("token_usage")
    return EngineStats(
        prefix,
        "sglang_decode" if decode else "sglang_prefill",
        prompt_tps=floats.get("prompt_tps"),
        gen_tps=floats.get("gen_tps"),
        running=ints.get("running"),
        waiting=ints.get("waiting"),
        kv_usage_pct=None if usage is None else round(usage * 100.0, 9),
        prefix_cache_hit_pct=floats.get("prefix_cache_hit_pct"),
        token_usage=usage,
        tokens_in_use=ints.get("tokens_in_use"),
        mal=floats.get("mal"),
        accept_rate=floats.get("accept_rate"),
        cuda_graph=graph,
        new_seqs=ints.get("new_seqs"),
        new_tokens=ints.get("new_tokens"),
        cached_tokens=ints.get("cached_tokens"),
        retracted_reqs=ints.get("retracted_reqs"),
        prealloc_reqs=ints.get("prealloc_reqs"),
        transfer_reqs=ints.get("transfer_reqs"),
        prealloc_usage=floats.get("prealloc_usage"),
    )


# Public for the whole-file scanner (engine_precheck): a ready line must contain it.
READY_ANCHOR = "The server is fired up and ready to roll"


def parse_sglang_event(prefix: LinePrefix, body: str) -> StartupFact | None:
    """SGLang's readiness line (event "server_ready"); failures are in `vllm_faults`."""
    return StartupFact(prefix, "server_ready") if READY_ANCHOR in body[:300] else None


_LLAMACPP_DRAFT = re.compile(
    r"draft acceptance rate = (\S+) \(\s*(\d+) accepted /\s*(\d+) generated\)"
)


def parse_llamacpp_draft(prefix: LinePrefix, body: str) -> SpecDecode | None:
    """llama.cpp `draft acceptance rate = 0.57576 (   19 accepted /    33 generated)`."""
    m = _LLAMACPP_DRAFT.search(body)
    if m is None:
        return None
    rate = to_float(m.group(1))
    return SpecDecode(
        prefix,
        "llamacpp",
        accepted=to_int(m.group(2)),
        drafted=to_int(m.group(3)),
        draft_acceptance_pct=None if rate is None else round(rate * 100.0, 9),
    )
