"""An engine's /metrics samples grouped by DP rank into the few inputs the derivation uses.

``group_samples`` maps every known name (vLLM old and new, SGLang ``sglang:`` and renamed
``sglang_``, llama.cpp; reference/engine.md 4.1-4.2, 7.3, 8) to a *role* (``gen``, ``drafts``,
``running``, …): counters are summed over labels other than the DP rank (``model_name``,
``finished_reason``), request gauges summed, ratio gauges maxed. Samples of TP ranks other than 0
are skipped (each TP rank reports the same batch). vLLM's ``engine`` label is the DP index;
SGLang's ``dp_rank`` is kept only when some rank is not 0, as its logs name DP ranks only with
attention DP, so both inputs label an engine's series alike. Pure.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from inferwatch.parsers.promtext import MetricSample, canonical_name

COUNTERS = {
    "vllm:generation_tokens_total": "gen", "vllm:prompt_tokens_total": "prompt",
    "vllm:spec_decode_num_drafts_total": "drafts",
    "vllm:spec_decode_num_draft_tokens_total": "draft_tokens",
    "vllm:spec_decode_num_accepted_tokens_total": "accepted",
    "vllm:spec_decode_num_emitted_tokens_total": "emitted",
    "vllm:spec_decode_num_accepted_tokens_per_pos_total": "pos",
    "vllm:iteration_tokens_total_count": "iter",
    "vllm:prefix_cache_queries_total": "pc_q", "vllm:prefix_cache_hits_total": "pc_h",
    "vllm:gpu_prefix_cache_queries_total": "pc_q", "vllm:gpu_prefix_cache_hits_total": "pc_h",
    "vllm:gpu_prefix_cache_queries": "pc_q", "vllm:gpu_prefix_cache_hits": "pc_h",
    "sglang:generation_tokens_total": "gen", "sglang:prompt_tokens_total": "prompt",
    "sglang:spec_verify_calls_total": "verify",
    "llamacpp:tokens_predicted_total": "gen", "llamacpp:prompt_tokens_total": "prompt",
    "llamacpp:n_decode_total": "iter",
}  # fmt: skip
GAUGES = {
    "vllm:num_requests_running": "running", "vllm:num_requests_waiting": "waiting",
    "vllm:kv_cache_usage_perc": "kv", "vllm:gpu_cache_usage_perc": "kv_old",
    "vllm:gpu_prefix_cache_hit_rate": "prefix",
    "sglang:num_running_reqs": "running", "sglang:num_queue_reqs": "waiting",
    "sglang:token_usage": "kv", "sglang:cache_hit_rate": "prefix",
    "llamacpp:requests_processing": "running", "llamacpp:requests_deferred": "waiting",
    "llamacpp:kv_cache_usage_ratio": "kv",
}  # fmt: skip
SUMMED = frozenset({"running", "waiting"})
SPEC_ROLES = frozenset({"drafts", "draft_tokens", "accepted", "emitted", "pos", "verify"})
Key = tuple[str, str]  # (role, position) — position "" except for per-position counters


@dataclass(slots=True)
class EngineSamples:
    """One DP rank's inputs: ``kind`` (vllm, sglang, llamacpp), counters by (role, position),
    gauges by role."""

    kind: str = ""
    counters: dict[Key, float] = field(default_factory=dict)
    gauges: dict[str, float] = field(default_factory=dict)


def spec_absent(cur: EngineSamples, several_dp: bool) -> bool:
    """Speculative decoding inferred off: vLLM exports spec counters only when it is set (not
    with DP > 1 in 0.10-era builds); llama.cpp's /metrics has none. SGLang: unknown."""
    if cur.kind == "llamacpp":
        return True
    return (
        cur.kind == "vllm" and not several_dp and not any(r in SPEC_ROLES for r, _ in cur.counters)
    )


def group_samples(samples: Iterable[MetricSample]) -> dict[str | None, EngineSamples]:
    """Per DP rank: counters summed over other labels, gauges summed (requests) or maxed."""
    out: dict[str | None, EngineSamples] = {}
    sglang_dp: set[str] = set()
    for s in samples:
        name = canonical_name(s.name)
        role = COUNTERS.get(name)
        gauge = None if role is not None else GAUGES.get(name)
        if role is None and gauge is None:
            continue
        labels = s.labels
        if labels.get("tp_rank", "0") != "0":
            continue
        sglang = name.startswith("sglang:")
        dp = labels.get("dp_rank") if sglang else labels.get("engine")
        if sglang and dp is not None:
            sglang_dp.add(dp)
        stream = out.get(dp)
        if stream is None:
            stream = out[dp] = EngineSamples(name.partition(":")[0])
        if role is not None:
            key = (role, labels.get("position", "") if role == "pos" else "")
            stream.counters[key] = stream.counters.get(key, 0.0) + s.value
        elif gauge is not None:
            before = stream.gauges.get(gauge)
            if before is None:
                stream.gauges[gauge] = s.value
            else:
                both = before + s.value if gauge in SUMMED else max(before, s.value)
                stream.gauges[gauge] = both
    if sglang_dp and sglang_dp <= {"0"}:  # no attention DP: one stream, as in its log
        merged = EngineSamples("sglang")
        for stream in out.values():
            for k, v in stream.counters.items():
                merged.counters[k] = merged.counters.get(k, 0.0) + v
            merged.gauges.update(stream.gauges)
        out = {None: merged}
    return out
