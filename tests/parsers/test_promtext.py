"""Prometheus text exposition from engines' /metrics.

Fixtures in tests/fixtures/engine/*.prom are modelled on reference/engine.md 4, 7.3 and 8 (their
header comments say so); none was captured from a running engine.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest

from inferwatch.parsers.promtext import (
    ExpositionError,
    MetricSample,
    canonical_name,
    engine_of,
    parse_exposition,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "engine"


def _load(name: str) -> list[MetricSample]:
    return parse_exposition((FIXTURES / name).read_text(encoding="utf-8"))


def _one(samples: list[MetricSample], name: str, **labels: str) -> MetricSample:
    found = [
        s
        for s in samples
        if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())
    ]
    assert len(found) == 1, (name, labels, found)
    return found[0]


def test_vllm_v1_fixture_types_and_names() -> None:
    samples = _load("vllm_v1_metrics.prom")
    running = _one(samples, "vllm:num_requests_running")
    assert (running.kind, running.value, dict(running.labels)) == (
        "gauge", 1.0, {"engine": "0", "model_name": "Qwen/Qwen3-8B"},
    )  # fmt: skip
    gen = _one(samples, "vllm:generation_tokens_total")
    assert (gen.kind, gen.family) == ("counter", "vllm:generation_tokens")
    steps = _one(samples, "vllm:iteration_tokens_total_count")
    assert (steps.kind, steps.family, steps.value) == (
        "histogram",
        "vllm:iteration_tokens_total",
        68,
    )
    inf = _one(samples, "vllm:iteration_tokens_total_bucket", le="+Inf")
    assert inf.value == 68
    info = _one(samples, "vllm:cache_config_info")
    assert info.labels["num_gpu_blocks"] == "26589"
    assert {s.labels["finished_reason"] for s in samples if s.name == "vllm:request_success_total"} == {
        "stop", "length", "abort",
    }  # fmt: skip


def test_vllm_v1_spec_counters_give_mal_and_per_position() -> None:
    """engine.md 4.4: MAL = 1 + accepted / drafts, per-position = accepted_per_pos / drafts."""
    samples = _load("vllm_v1_metrics.prom")
    drafts = _one(samples, "vllm:spec_decode_num_drafts_total").value
    accepted = _one(samples, "vllm:spec_decode_num_accepted_tokens_total").value
    per_pos = sorted(
        (int(s.labels["position"]), s.value)
        for s in samples
        if s.name == "vllm:spec_decode_num_accepted_tokens_per_pos_total"
    )
    assert math.isclose(1 + accepted / drafts, 2.2)
    assert [round(v / drafts, 3) for _, v in per_pos] == [0.615, 0.415, 0.169]
    assert sum(v for _, v in per_pos) == accepted


def test_vllm_v0_fixture() -> None:
    samples = _load("vllm_v0_metrics.prom")
    assert all(set(s.labels) == {"model_name"} for s in samples)
    assert _one(samples, "vllm:num_requests_swapped").kind == "gauge"
    assert _one(samples, "vllm:spec_decode_num_emitted_tokens_total").value == 34244


def test_sglang_fixture_and_renamed_names() -> None:
    samples = _load("sglang_metrics.prom")
    assert _one(samples, "sglang:spec_accept_length").value == 1.95
    renamed = _one(samples, "sglang_cache_hit_rate")
    assert canonical_name(renamed.name) == "sglang:cache_hit_rate"
    assert engine_of(renamed.name) == "sglang"
    counter = _one(samples, "sglang_prompt_tokens_total")
    assert (counter.kind, canonical_name(counter.name)) == ("counter", "sglang:prompt_tokens_total")
    gen = _one(samples, "sglang:generation_tokens_total").value
    verify = _one(samples, "sglang:spec_verify_calls_total").value
    assert math.isclose(gen / verify, 1.95, abs_tol=0.01)  # engine.md 7.3 MAL from counters


def test_llamacpp_fixture_keeps_exposed_names() -> None:
    samples = _load("llamacpp_metrics.prom")
    assert all(not s.labels for s in samples)
    assert {s.name for s in samples} == {
        "llamacpp:prompt_tokens_total",
        "llamacpp:prompt_seconds_total",
        "llamacpp:tokens_predicted_total",
        "llamacpp:tokens_predicted_seconds_total",
        "llamacpp:n_decode_total",
        "llamacpp:n_busy_slots_per_decode",  # declared counter without `_total`: name kept
        "llamacpp:prompt_tokens_seconds",
        "llamacpp:predicted_tokens_seconds",
        "llamacpp:requests_processing",
        "llamacpp:requests_deferred",
    }
    assert _one(samples, "llamacpp:n_busy_slots_per_decode").kind == "counter"
    assert engine_of("llamacpp:n_decode_total") == "llamacpp"


def test_empty_body_is_no_samples() -> None:
    assert parse_exposition("") == []
    assert parse_exposition("# just a comment\n\n") == []


def test_untyped_nan_and_timestamp() -> None:
    samples = parse_exposition('x{a="b\\"c"} NaN 1700000000000\n')
    assert len(samples) == 1
    sample = samples[0]
    assert (sample.name, sample.kind, dict(sample.labels)) == ("x", "untyped", {"a": 'b"c'})
    assert math.isnan(sample.value)
    assert sample.timestamp == 1700000000.0


def test_sample_is_frozen_with_slots() -> None:
    sample = parse_exposition("vllm:x 1\n")[0]
    assert not hasattr(sample, "__dict__")
    with pytest.raises(dataclasses.FrozenInstanceError):
        sample.value = 2.0  # type: ignore[misc]
    assert hash(sample) == hash(dataclasses.replace(sample, labels={"other": "labels"}))


@pytest.mark.parametrize(
    ("text", "line_no"),
    [
        ('vllm:ok 1\nvllm:foo{model_name="x" 1\n', 2),
        ('# TYPE vllm:foo gauge\nvllm:foo{model_name="x"} abc\n', 2),
        ("# TYPE x bogus\nx 1\n", 1),
        ("a 1\nb 2\n{} 1\n", 3),
        ("x{a=b} 1\n", 1),
        ("ok 1\nbad\x00 1\n", 2),
    ],
)
def test_malformed_input_names_the_line(text: str, line_no: int) -> None:
    with pytest.raises(ExpositionError) as info:
        parse_exposition(text)
    assert isinstance(info.value, ValueError)
    assert info.value.line_no == line_no
    assert info.value.line == text.splitlines()[line_no - 1]
    assert f"line {line_no}" in str(info.value)


def test_names_outside_engines() -> None:
    assert engine_of("process_cpu_seconds_total") is None
    assert canonical_name("vllm:num_requests_running") == "vllm:num_requests_running"
    assert canonical_name("vllm_num_requests_running") == "vllm:num_requests_running"
