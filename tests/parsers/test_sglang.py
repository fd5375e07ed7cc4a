"""SGLang batch lines, readiness and failures, and llama.cpp's documented log line.

Lines are built from the templates in reference/engine.md 7.1 and 8 (not captured); the captured
SGLang lines are covered by test_engine_corpus.py.
"""

from __future__ import annotations

import math

import pytest

from inferwatch.parsers.engine import EngineCrash, EngineStats, SpecDecode, StartupFact
from inferwatch.parsers.engine import parse_engine_line as parse
from inferwatch.parsers.engine_prefix import EMPTY_PREFIX
from inferwatch.parsers.sglang import parse_batch, parse_llamacpp_draft


def _stats(line: str) -> EngineStats:
    record = parse(line)
    assert isinstance(record, EngineStats), (line, record)
    return record


@pytest.mark.parametrize("sep", [".", ","])
@pytest.mark.parametrize("tail", ["", ",", ", "])
def test_decode_separators_and_trailing_commas(sep: str, tail: str) -> None:
    s = _stats(
        f"[2025-10-22 10:27:57 TP0] Decode batch{sep} #running-req: 4, #token: 9000, token usage: "
        f"0.25, gen throughput (token/s): 321.50, #queue-req: 7{tail}"
    )
    assert (s.format, s.running, s.tokens_in_use, s.token_usage, s.gen_tps, s.waiting) == (
        "sglang_decode", 4, 9000, 0.25, 321.5, 7,
    )  # fmt: skip
    assert s.kv_usage_pct == 25.0
    assert (s.mal, s.accept_rate, s.cuda_graph, s.dp_rank, s.prompt_tps) == (
        None, None, None, None, None,
    )  # fmt: skip
    assert s.prefix.tp_rank == 0


def test_decode_with_spec_and_graph_fields() -> None:
    s = _stats(
        "[2025-10-22 10:27:57 DP1 TP3] Decode batch. #running-req: 1, #token: 186, token usage: "
        "0.00, accept len: 1.95, accept rate: 0.49, cuda graph: True, gen throughput (token/s): "
        "178.86, #queue-req: 0, "
    )
    assert (s.mal, s.accept_rate, s.cuda_graph) == (1.95, 0.49, True)
    assert (s.prefix.tp_rank, s.prefix.dp_rank, s.dp_rank) == (3, 1, None)
    assert s.gen_tps is not None
    assert s.mal is not None
    # engine.md 7.2: step rate = gen throughput / accept len (91.7 request-steps/s here)
    assert math.isclose(s.gen_tps / s.mal, 91.7, abs_tol=0.05)


@pytest.mark.parametrize(("key", "value"), [("cpu graph", False), ("npu graph", True)])
def test_graph_field_variants(key: str, value: bool) -> None:
    s = _stats(
        f"Decode batch, #running-req: 1, #token: 10, token usage: 0.01, {key}: {value}, "
        "gen throughput (token/s): 12.00, #queue-req: 0"
    )
    assert s.cuda_graph is value


def test_decode_with_pd_disaggregation_fields() -> None:
    s = _stats(
        "[2026-01-01 00:00:00 TP0] Decode batch, #running-req: 2, #token: 500, token usage: 0.10, "
        "pre-allocated usage: 0.05, #prealloc-req: 3, #transfer-req: 1, #retracted-req: 0, "
        "cuda graph: True, gen throughput (token/s): 80.00, #queue-req: 0,"
    )
    assert (s.prealloc_usage, s.prealloc_reqs, s.transfer_reqs, s.retracted_reqs) == (0.05, 3, 1, 0)
    assert s.gen_tps == 80.0


def test_prefill_with_and_without_input_throughput() -> None:
    full = _stats(
        "[2026-04-05 20:02:51] Prefill batch, #new-seq: 3, #new-token: 4096, #cached-token: 512, "
        "token usage: 0.33, #running-req: 5, #queue-req: 2, cuda graph: False, input throughput "
        "(token/s): 8123.40"
    )
    assert (full.format, full.new_seqs, full.new_tokens, full.cached_tokens) == (
        "sglang_prefill", 3, 4096, 512,
    )  # fmt: skip
    assert (full.prompt_tps, full.gen_tps, full.running, full.waiting) == (8123.4, None, 5, 2)
    assert (full.kv_usage_pct, full.cuda_graph) == (33.0, False)
    short = _stats(
        "[12:00:00 TP1] Prefill batch. #new-seq: 1, #new-token: 7, #cached-token: 0, token usage: "
        "0.00, #running-req: 0, #queue-req: 0"
    )
    assert (short.prompt_tps, short.cuda_graph, short.prefix.tp_rank) == (None, None, 1)
    assert {"new_seqs", "new_tokens", "cached_tokens", "token_usage"} <= short.to_dict().keys()


def test_sglang_python_logging_format() -> None:
    s = _stats(
        "2026-06-07 10:59:31,659 [INFO] sglang.srt.managers.scheduler: Decode batch, "
        "#running-req: 1, #token: 227, token usage: 0.00, gen throughput (token/s): 126.29, "
        "#queue-req: 0,"
    )
    assert (s.running, s.gen_tps) == (1, 126.29)
    assert s.prefix.level == "INFO"


def test_batch_without_fields_is_nothing() -> None:
    assert parse_batch(EMPTY_PREFIX, "Decode batch finished") is None
    assert parse("Prefill batch.") is None


def test_readiness_and_failures() -> None:
    ready = parse("[2025-01-01 00:00:00] The server is fired up and ready to roll!")
    assert isinstance(ready, StartupFact)
    assert ready.event == "server_ready"
    failed = parse("[2025-01-01 00:00:00 TP0] Initialization failed. warmup error: boom")
    assert isinstance(failed, EngineCrash)
    assert failed.signature == "startup_failed"
    leak = parse("[2025-01-01 00:00:00 TP0] ValueError: KV cache pool leak detected! x")
    assert isinstance(leak, EngineCrash)
    assert (leak.signature, leak.exception) == ("exception", "ValueError")


@pytest.mark.parametrize(
    "line",
    [
        "slot print_timing: id  0 | task 0 | draft acceptance rate = 0.57576 (   19 accepted /    "
        "33 generated)",
        "draft acceptance rate = 0.57576 (19 accepted / 33 generated)",
    ],
)
def test_llamacpp_draft_acceptance(line: str) -> None:
    record = parse(line)
    assert isinstance(record, SpecDecode)
    assert (record.format, record.accepted, record.drafted, record.cumulative) == (
        "llamacpp", 19, 33, False,
    )  # fmt: skip
    assert record.draft_acceptance_pct is not None
    assert math.isclose(record.draft_acceptance_pct, 57.576)
    assert record.mal is None  # one request's counts; no drafts count to derive MAL from


def test_llamacpp_without_counts_is_nothing() -> None:
    assert parse_llamacpp_draft(EMPTY_PREFIX, "draft acceptance rate = 0.5") is None
