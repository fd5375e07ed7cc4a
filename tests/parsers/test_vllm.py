"""vLLM lines: stats, speculative decoding, start-up facts, crashes, access and other kinds.

Every line here is built from a template in reference/engine.md (or a real line quoted there
from outside the corpus, as cited); none is presented as captured. The captured corpus lines are
covered by test_engine_corpus.py.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from inferwatch.derive.engine.spec import line_mal
from inferwatch.parsers.engine import (
    BULK_LONG,
    AccessLog,
    EngineCrash,
    EngineStats,
    OtherLine,
    SpecDecode,
    StartupFact,
    parse_engine_line,
)
from inferwatch.parsers.engine_prefix import EMPTY_PREFIX
from inferwatch.parsers.vllm import parse_spec, parse_stats

HDR = "(APIServer pid=66) INFO 09-02 08:46:23 [v1/metrics/loggers.py:271] "
V1_CORE = (
    "Avg prompt throughput: 10.0 tokens/s, Avg generation throughput: 96.5 tokens/s, "
    "Running: 3 reqs, Waiting: 2 reqs"
)


def _fields(line: str) -> dict[str, Any]:
    record = parse_engine_line(line)
    assert record is not None, line
    return record.to_dict()


def _stats(line: str) -> EngineStats:
    record = parse_engine_line(line)
    assert isinstance(record, EngineStats), (line, record)
    return record


def _spec(line: str) -> SpecDecode:
    record = parse_engine_line(line)
    assert isinstance(record, SpecDecode), (line, record)
    return record


# ------------------------------------------------------------------------------- stats


def test_v1_list_join_with_optional_fields_in_the_middle_and_at_the_end() -> None:
    line = (
        f"{HDR}Engine 001: {V1_CORE}, Deferred: 1 reqs, Preemptions: 4, GPU KV cache usage: 91.2%, "
        "Prefix cache hit rate: 10.5%, Corrupted: 0 reqs, External prefix cache hit rate: 3.0%, "
        "MM cache hit rate: 1.0%"
    )
    s = _stats(line)
    assert (s.format, s.dp_rank, s.prompt_tps, s.gen_tps, s.running, s.waiting) == (
        "vllm_v1", 1, 10.0, 96.5, 3, 2,
    )  # fmt: skip
    assert (s.deferred, s.preemptions, s.kv_usage_pct, s.prefix_cache_hit_pct) == (1, 4, 91.2, 10.5)
    assert (s.corrupted, s.external_prefix_cache_hit_pct, s.mm_cache_hit_pct) == (0, 3.0, 1.0)


def test_v1_unknown_new_field_is_ignored_and_order_does_not_matter() -> None:
    line = (
        "Engine 000: Avg generation throughput: 5.0 tokens/s, Avg prompt throughput: 1.0 tokens/s, "
        "Running: 1 reqs, Shiny new thing: 42 widgets, Waiting: 0 reqs, GPU KV cache usage: 3.0%, "
        "Prefix cache hit rate: 0.0%   "
    )
    s = _stats(line)
    assert (s.gen_tps, s.prompt_tps, s.running, s.waiting, s.kv_usage_pct) == (5.0, 1.0, 1, 0, 3.0)


def test_aggregated_engines_line() -> None:
    """Shape of the #v0.22-era example quoted in engine.md 2.1 (not captured here)."""
    s = _stats(
        f"{HDR}2 Engines Aggregated: {V1_CORE}, GPU KV cache usage: 1.2%, Prefix cache hit rate: 0.0%"
    )
    assert (s.format, s.dp_rank, s.aggregated_engines, s.running) == ("vllm_v1", None, 2, 3)
    one = _stats(f"{HDR}1 Engines Aggregated: {V1_CORE}")
    assert one.aggregated_engines == 1


def test_v0_with_and_without_trailing_period() -> None:
    base = (
        "INFO 01-22 18:27:20 metrics.py:449] Avg prompt throughput: 0.0 tokens/s, Avg generation "
        "throughput: 41.7 tokens/s, Running: 1 reqs, Swapped: 2 reqs, Pending: 3 reqs, GPU KV cache "
        "usage: 2.0%, CPU KV cache usage: 0.5%"
    )
    for line in (base, base + "."):
        s = _stats(line)
        assert (s.format, s.waiting, s.swapped, s.cpu_kv_usage_pct, s.dp_rank) == (
            "vllm_v0", 3, 2, 0.5, None,
        )  # fmt: skip
        assert s.to_dict()["prefix_cache_hit_pct"] is None


def test_v0_separate_prefix_cache_line_attaches_to_the_stats_line() -> None:
    """Real example outside the corpus quoted in engine.md 2.1 (#18674)."""
    cache = _stats(
        "INFO 05-25 06:50:29 [metrics.py:502] Prefix cache hit rate: GPU: 0.00%, CPU: 90.00%"
    )
    assert cache.format == "vllm_v0_prefix_cache"
    assert (cache.prefix_cache_hit_pct, cache.cpu_prefix_cache_hit_pct) == (0.0, 90.0)
    stats = _stats(
        "INFO 05-25 06:50:29 [metrics.py:486] Avg prompt throughput: 1.0 tokens/s, Avg generation "
        "throughput: 2.0 tokens/s, Running: 1 reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache "
        "usage: 2.0%, CPU KV cache usage: 0.0%."
    )
    assert (stats.format, stats.gen_tps, stats.prefix_cache_hit_pct) == ("vllm_v0", 2.0, None)


def test_stats_without_throughput_is_not_a_stats_line() -> None:
    assert parse_stats(EMPTY_PREFIX, "Avg prompt throughput: soon") is None


# -------------------------------------------------------------------------- spec decode

GEN2 = (
    "SpecDecoding metrics: Draft acceptance rate: 40.0%, Mean acceptance length: 2.20, "
    "Accepted: 78 tokens, Drafted: 195 tokens, Per-position acceptance rate: 0.615, 0.415, 0.169"
)


def test_gen2_line() -> None:
    s = _spec(HDR + GEN2)
    assert (s.format, s.mal, s.accepted, s.drafted, s.k, s.draft_acceptance_pct) == (
        "vllm_v1_gen2", 2.2, 78, 195, 3, 40.0,
    )  # fmt: skip
    assert s.per_position == (0.615, 0.415, 0.169)
    assert (s.accepted_tps, s.drafted_tps, s.cumulative) == (None, None, False)


def test_gen3_with_new_field_after_the_list() -> None:
    s = _spec(
        "SpecDecoding metrics: Mean acceptance length: 3.10, Accepted throughput: 20.00 tokens/s, "
        "Drafted throughput: 40.00 tokens/s, Accepted: 210 tokens, Drafted: 400 tokens, "
        "Per-position acceptance rate: 0.800, 0.700, 0.400, 0.200, Avg Draft acceptance rate: "
        "52.5%, Rejected by grammar: 0 tokens"
    )
    assert s.format == "vllm_v1_gen3"
    assert s.per_position == (0.8, 0.7, 0.4, 0.2)
    assert (s.k, s.draft_acceptance_pct, s.accepted, s.drafted) == (4, 52.5, 210, 400)


def test_nan_rates_become_unknown() -> None:
    s = _spec(
        "SpecDecoding metrics: Draft acceptance rate: nan%, Accepted: 0 tokens, Drafted: 0 tokens"
    )
    assert (s.format, s.draft_acceptance_pct, s.accepted, s.drafted) == ("vllm_v1_gen1", None, 0, 0)
    s2 = _spec(
        "SpecDecoding metrics: Draft acceptance rate: nan%, Mean acceptance length: nan, Accepted: "
        "0 tokens, Drafted: 0 tokens, Per-position acceptance rate: nan, nan"
    )
    assert (s2.mal, s2.per_position, s2.k) == (None, None, 2)


def test_early_v0_doubled_tokens_and_mal_from_emitted() -> None:
    s = _spec(
        "Speculative metrics: Draft acceptance rate: 0.607, System efficiency: 0.510, Number of "
        "speculative tokens: 4, Number of accepted tokens: 32594, Number of draft tokens tokens: "
        "53716, Number of emitted tokens tokens: 34244."
    )
    assert (s.format, s.k, s.drafted, s.emitted, s.cumulative) == (
        "vllm_v0", 4, 53716, 34244, True,
    )  # fmt: skip
    assert s.mal is None  # a V0 line prints no MAL; the parser reports only what is printed
    mal = line_mal(s)  # engine.md 3.3: emitted / (drafted / k), never 1 + accepted / drafts
    assert mal == 2.55
    assert s.draft_acceptance_pct is not None
    assert math.isclose(s.draft_acceptance_pct, 60.7)
    assert s.system_efficiency is not None
    assert s.k is not None
    assert math.isclose(s.system_efficiency * (s.k + 1), mal, abs_tol=0.01)


def test_spec_anchor_missing_or_empty() -> None:
    assert parse_spec(EMPTY_PREFIX, "SpecDecoding timing: 1.0 ms") is None
    assert parse_spec(EMPTY_PREFIX, "SpecDecoding metrics: ") is None


# ----------------------------------------------------------------------------- start-up

STARTUP: list[tuple[str, str, dict[str, Any]]] = [
    ("GPU KV cache size: 2,042,016 tokens", "kv_cache_size", {"kv_cache_tokens": 2042016}),
    (
        "Maximum concurrency for 131,072 tokens per request: 15.58x",
        "max_concurrency",
        {"max_concurrency": 15.58, "tokens_per_request": 131072},
    ),
    ("# GPU blocks: 2000, # CPU blocks: 512", "gpu_blocks",
     {"num_gpu_blocks": 2000, "num_cpu_blocks": 512}),
    (
        "Engine 001: vllm cache_config_info with initialization after num_gpu_blocks is: 26589",
        "cache_config_info",
        {"dp_rank": 1, "num_gpu_blocks": 26589},
    ),
    ("Available KV cache memory: 20.5 GiB", "kv_cache_memory", {"kv_cache_memory_gib": 20.5}),
    (
        "Memory profiling results: total_gpu_memory=79.11GiB initial_memory_usage=1.0GiB "
        "kv_cache_size=52.53GiB gpu_memory_utilization=0.92",
        "memory_profile",
        {"total_gpu_memory_gib": 79.11, "kv_cache_memory_gib": 52.53, "gpu_memory_utilization": 0.92},
    ),
    ("torch.compile takes 31.4 s in total", "torch_compile", {"seconds": 31.4}),
    (
        "init engine (profile, create kv cache, warmup model) took 78.02 seconds",
        "init_engine",
        {"seconds": 78.02},
    ),
    ("Graph capturing finished in 42 secs, took 1.25 GiB", "graph_capture",
     {"seconds": 42, "memory_gib": 1.25}),
    ("Model loading took 15.2 GiB memory and 9.5 seconds", "model_loading",
     {"seconds": 9.5, "memory_gib": 15.2}),
    ("Loading model weights took 14.9888 GB", "model_loading",
     {"seconds": None, "memory_gib": 14.9888}),
    ("vLLM API server version 0.31.0", "version", {"version": "0.31.0"}),
    (
        "Initializing a V1 LLM engine (v0.11.0) with config: model='Qwen/Qwen3-8B', "
        "speculative_config=SpeculativeConfig(model='draft'), tokenizer='Qwen/Qwen3-8B'",
        "engine_config",
        {"model": "Qwen/Qwen3-8B", "version": "0.11.0"},
    ),
    ("Starting vLLM API server on http://0.0.0.0:8000", "api_server_starting",
     {"url": "http://0.0.0.0:8000"}),
    ("Starting vLLM API server 1 on http://0.0.0.0:8001", "api_server_starting",
     {"url": "http://0.0.0.0:8001"}),
    ("Available routes are:", "routes_header", {}),
    ("Route: /v1/models, Methods: GET, HEAD", "route",
     {"route": "/v1/models", "methods": ["GET", "HEAD"]}),
    ("Supported tasks: ['generate', 'embed']", "supported_tasks",
     {"tasks": ["generate", "embed"]}),
    ("vLLM to use /tmp/x as PROMETHEUS_MULTIPROC_DIR", "prometheus_multiproc_dir",
     {"path": "/tmp/x"}),
    ("Chat template warmup completed in 234.6ms", "chat_template_warmup",
     {"milliseconds": 234.6}),
    ("Chat template warmup completed in 0.743s", "chat_template_warmup",
     {"milliseconds": 743.0}),
    ("Core engine process 0 ready.", "engine_core_ready", {}),
    ("Waiting for init message from front-end.", "engine_waiting_frontend", {}),
]  # fmt: skip


@pytest.mark.parametrize(("message", "event", "want"), STARTUP, ids=[s[1] for s in STARTUP])
def test_startup_fact(message: str, event: str, want: dict[str, Any]) -> None:
    got = _fields(f"(EngineCore_DP0 pid=9) INFO 01-01 00:00:00 [core.py:1] {message}")
    assert (got["type"], got["event"]) == ("startup", event)
    for key, value in want.items():
        assert got[key] == value, (key, got)


@pytest.mark.parametrize(
    ("line", "event"),
    [
        ("INFO:     Started server process [1234]", "server_process_started"),
        ("INFO:     Waiting for application startup.", "waiting_app_startup"),
        ("(APIServer pid=5) INFO:     Application startup complete.", "app_startup_complete"),
    ],
)
def test_uvicorn_startup_lines(line: str, event: str) -> None:
    record = parse_engine_line(line)
    assert isinstance(record, StartupFact)
    assert record.event == event
    assert record.prefix.level == "INFO"


# ---------------------------------------------------------------------- crashes (5.1/5.2)

CRASHES: list[tuple[str, str, str | None, dict[str, Any]]] = [
    ("Engine core proc EngineCore_DP0 died unexpectedly, shutting down client.", "engine_died",
     None, {"engine_proc": "EngineCore_DP0"}),
    ("AssertionError: expert parallel group size must divide 8", "assertion", "AssertionError", {}),
    ("AssertionError", "assertion", "AssertionError", {}),
    ("RuntimeError: x INTERNAL ASSERT FAILED at \"a.cpp\":1", "assertion", "RuntimeError", {}),
    ("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 3 has a "
     "total capacty of 79.11 GiB", "cuda_oom", "torch.cuda.OutOfMemoryError", {"gpu": 3}),
    ("RuntimeError: CUDA error: an illegal memory access was encountered", "illegal_memory_access",
     "RuntimeError", {}),
    ("RuntimeError('CUDA error: an illegal memory access was encountered')",
     "illegal_memory_access", "RuntimeError", {}),
    ("ValueError: The model's max seq len (131072) is larger than the maximum number of tokens "
     "that can be stored in KV cache (50000). Try increasing `gpu_memory_utilization`",
     "startup_failed", "ValueError", {"max_seq_len": 131072, "kv_cache_tokens": 50000}),
    ("Engine background task failed", "engine_dead", None, {}),
    ("Engine iteration timed out. This should never happen!", "iteration_timeout", None, {}),
    ("[Rank 2] Timeout at NCCL work: 12, last enqueued NCCL work: 12", "nccl", None, {"rank": 2}),
    ("zmq.error.ZMQError: Operation cannot be accomplished in current state", "exception",
     "zmq.error.ZMQError", {}),
]  # fmt: skip


@pytest.mark.parametrize(("message", "signature", "exception", "want"), CRASHES,
                         ids=[c[0][:30] for c in CRASHES])  # fmt: skip
def test_crash_signature(
    message: str, signature: str, exception: str | None, want: dict[str, Any]
) -> None:
    record = parse_engine_line(f"(EngineCore_DP0 pid=7) ERROR 01-01 00:00:00 [core.py:1] {message}")
    assert isinstance(record, EngineCrash)
    assert (record.signature, record.exception) == (signature, exception)
    for key, value in want.items():
        assert getattr(record, key) == value


def test_exception_lines_at_info_are_not_crashes() -> None:
    assert parse_engine_line("INFO 01-01 00:00:00 [a.py:1] ValueError: nothing to see") is None


# ------------------------------------------------------------------- other kinds, access

OTHER = [
    ("(Worker_TP1 pid=3) INFO 01-01 00:00:00 [multiproc_executor.py:1] WorkerProc shutting down.",
     "teardown"),
    ("INFO 01-01 00:00:00 [coordinator.py:1] DP Coordinator process exiting", "teardown"),
    ("(EngineCore_DP0 pid=1) ERROR 01-01 00:00:00 [dump_input.py:1] Dumping input data for V1 LLM "
     "engine (v0.11.0) with config: model='m'", "crash_dump"),
    ("(EngineCore_DP0 pid=1) ERROR 01-01 00:00:00 [core.py:1] ", None),
    ("(EngineCore_DP0 pid=1) ERROR 01-01 00:00:00 [core.py:1]     ^^^^^^^^^^^", "traceback"),
    ("(EngineCore_DP0 pid=1) ERROR 01-01 00:00:00 [core.py:1] The above exception was the direct "
     "cause of the following exception:", "traceback"),
    ("CUDA kernel errors might be asynchronously reported at some other API call", "cuda_error_detail"),
    ("For debugging consider passing CUDA_LAUNCH_BLOCKING=1", "cuda_error_detail"),
    ("WARNING 01-01 00:00:00 shm_broadcast.py:1] No available block found in 60 second. ",
     "shm_broadcast_wait"),
    ("WARNING 01-01 00:00:00 [protocol.py:58] The following fields were present in the request "
     "but ignored: {'reasoning_effort'}", "warning"),
    ("/usr/lib/python3/x.py:12: FutureWarning: blah is deprecated", "warning"),
    ("INFO:     Shutting down", "server_shutdown"),
    ("DEBUG 01-23 06:33:36 client.py:154] Waiting for output from MQLLMEngine.", "heartbeat"),
    ("INFO 01-01 00:00:00 [logger.py:43] Added request chatcmpl-0123.", None),
    ("INFO 01-01 00:00:00 [api_server.py:1] args: Namespace(host=None, port=8000)", None),
    ("Loading safetensors checkpoint shards: 100% Completed | 4/4 [00:02<00:00, 1.53it/s]", None),
    ("", None),
    ("   ", None),
]  # fmt: skip


@pytest.mark.parametrize(("line", "kind"), OTHER, ids=[o[0][:40] for o in OTHER])
def test_other_kinds_and_nothing(line: str, kind: str | None) -> None:
    record = parse_engine_line(line)
    if kind is None:
        assert record is None
    else:
        assert isinstance(record, OtherLine), record
        assert record.kind == kind


def test_bulk_request_logging_is_rejected() -> None:
    prompt = "lorem ipsum " * 300
    assert (
        parse_engine_line(
            f"INFO 10-29 01:09:12 [logger.py:43] Received request chatcmpl-1: prompt: '{prompt}'"
        )
        is None
    )
    assert (
        parse_engine_line(
            f"(APIServer pid=1) INFO 10-29 01:09:12 [logger.py:1] Generated response x: output: "
            f"'{prompt}'"
        )
        is None
    )


def test_bulk_lines_are_long_in_utf8_bytes() -> None:
    """More than BULK_LONG bytes, not characters: 120 CJK characters of prompt are 360 bytes. A
    line whose marker is not at its message's start is read as bulk too, where the same line in
    ASCII (fewer bytes) is read for what it says."""
    cjk = "INFO 10-29 01:09:12 [logger.py:43] Received request r: prompt: '" + "数据" * 60 + "'"
    assert len(cjk) < BULK_LONG < len(cjk.encode())
    assert parse_engine_line(cjk) is None
    line = "x" * 10 + " Received request r: prompt: 'CUDA out of memory " + "数" * 120 + "'"
    assert len(line) <= BULK_LONG < len(line.encode())
    assert parse_engine_line(line) is None
    assert isinstance(parse_engine_line(line.replace("数", "a")), EngineCrash)
    lone = line.replace("数", "\udcff")  # a lone surrogate (surrogateescape) counts three bytes
    assert parse_engine_line(lone) is None


def test_access_line_fields() -> None:
    record = parse_engine_line(
        '(APIServer pid=1) INFO:     [::1]:5000 - "POST /v1/completions HTTP/2" 500 Internal Error'
    )
    assert isinstance(record, AccessLog)
    assert (record.client, record.method, record.path, record.status) == (
        "[::1]:5000", "POST", "/v1/completions", 500,
    )  # fmt: skip
    assert record.prefix.to_dict()["proc"] == "APIServer"
    assert parse_engine_line('INFO:     not - "an access line"') is None
