"""The series the engine pipeline writes, with their HELP texts, as one table.

Both engine derivations (the log, ``engine_log``; /metrics, ``engine_metrics``) write the same
names with the same labels (``engine`` = the configured engine name, ``dp_rank`` = vLLM's DP index
or SGLang's DP rank where the input names one), so a rule or a dashboard never cares which input
produced a value. ``ARBITRATED`` lists the names both can write; ``engine_arbiter`` decides which
one does, per engine, so a series never mixes the two. The daemon calls ``store.describe`` for
each row at start-up, as it does for ``kernel_metrics``.
"""

from __future__ import annotations

from typing import Final

from inferwatch.derive.engine.thresholds import describe_thresholds
from inferwatch.derive.kernel.metrics import MetricSpec
from inferwatch.event import Kind
from inferwatch.store.tsdb import SeriesStore

DECODE: Final = "inferwatch_engine_decode_tokens_per_second"
PREFILL: Final = "inferwatch_engine_prefill_tokens_per_second"
RUNNING: Final = "inferwatch_engine_requests_running"
WAITING: Final = "inferwatch_engine_requests_waiting"
KV_USAGE: Final = "inferwatch_engine_kv_cache_usage_ratio"
PREFIX_HIT: Final = "inferwatch_engine_prefix_cache_hit_ratio"
MAL: Final = "inferwatch_engine_spec_acceptance_length"
POSITION: Final = "inferwatch_engine_spec_position_acceptance_ratio"
DRAFT_ACCEPT: Final = "inferwatch_engine_spec_draft_acceptance_ratio"
STEPS: Final = "inferwatch_engine_steps_per_second"
FORWARD_STEPS: Final = "inferwatch_engine_forward_steps_per_second"
LAST_STATS: Final = "inferwatch_engine_last_stats_timestamp_seconds"
KV_CAPACITY: Final = "inferwatch_engine_kv_cache_capacity_tokens"
START_TIME: Final = "inferwatch_engine_start_time_seconds"
UP: Final = "inferwatch_engine_up"
CRASHES: Final = "inferwatch_engine_crashes_total"
GENERATED: Final = "inferwatch_engine_generated_tokens_total"
STALL_WARNINGS: Final = "inferwatch_engine_stall_warnings_total"
CRASHED: Final = "inferwatch_engine_crashed"

ARBITRATED: Final = frozenset(
    {DECODE, PREFILL, RUNNING, WAITING, KV_USAGE, PREFIX_HIT, MAL, POSITION, DRAFT_ACCEPT, STEPS}
)
"""Names both the log and /metrics can write; one of them owns each per engine at a time."""

RATE_NAMES: Final = (DECODE, PREFILL, MAL, POSITION, DRAFT_ACCEPT, STEPS, FORWARD_STEPS)
"""Window rates: they end (a staleness marker) when the engine restarts or dies."""

_ENGINE = ("engine", "dp_rank")

ENGINE_METRICS: Final[tuple[MetricSpec, ...]] = (
    MetricSpec(DECODE, Kind.GAUGE, "Generated tokens per second over the engine's last "
               "window (accepted draft tokens included: a token rate, not a step rate).", _ENGINE),
    MetricSpec(PREFILL, Kind.GAUGE, "Prompt (prefill) tokens per second over the last window.",
               _ENGINE),
    MetricSpec(RUNNING, Kind.GAUGE, "Requests in the running batch (the scheduler's snapshot).",
               _ENGINE),
    MetricSpec(WAITING, Kind.GAUGE, "Requests waiting to be scheduled.", _ENGINE),
    MetricSpec(GENERATED, Kind.COUNTER, "Tokens generated, summed from the log's stats windows "
               "(flat while requests run = a stalled engine).", _ENGINE),
    MetricSpec(CRASHED, Kind.GAUGE, "1 from a crash (by root-cause signature) until the engine is "
               "seen back (a start-up, a stats line, /metrics answering again), then 0.",
               ("engine", "signature")),
    MetricSpec(STALL_WARNINGS, Kind.COUNTER, "Engine lines saying a worker waited a minute for "
               "the others (vLLM's shared-memory broadcast): a hang under way.", _ENGINE),
    MetricSpec(KV_USAGE, Kind.GAUGE, "Share of the KV cache in use (0-1).", _ENGINE),
    MetricSpec(PREFIX_HIT, Kind.GAUGE, "Prefix cache hit ratio (0-1): over recent requests from "
               "the log, over the scrape interval from /metrics.", _ENGINE),
    MetricSpec(MAL, Kind.GAUGE, "Mean acceptance length of speculative decoding over the last "
               "window (1 + accepted / drafts); absent when nothing was drafted or when "
               "speculative decoding is off.", _ENGINE),
    MetricSpec(POSITION, Kind.GAUGE, "Share of drafts whose first position+1 draft tokens were "
               "all accepted (position is 0-based).", (*_ENGINE, "position")),
    MetricSpec(DRAFT_ACCEPT, Kind.GAUGE, "Accepted draft tokens / drafted tokens over the last "
               "window.", _ENGINE),
    MetricSpec(STEPS, Kind.GAUGE, "Request-steps per second (decode tokens/s / MAL); equals "
               "engine forward steps/s when one request runs. Moves with the stack, not with "
               "content.", _ENGINE),
    MetricSpec(FORWARD_STEPS, Kind.GAUGE, "Engine forward steps per second from /metrics "
               "(vllm:iteration_tokens_total_count, llamacpp:n_decode_total); flat while "
               "requests run means a stall.", _ENGINE),
    MetricSpec(LAST_STATS, Kind.GAUGE, "Time of the engine's last periodic stats line (vLLM "
               "suppresses them while idle: silence after a 0.0/0.0 line is not a fault).",
               _ENGINE),
    MetricSpec(KV_CAPACITY, Kind.GAUGE, "KV cache capacity in tokens, from the start-up log.",
               _ENGINE),
    MetricSpec(START_TIME, Kind.GAUGE, "Time the engine's latest start-up began (first start-up "
               "line).", ("engine",)),
    MetricSpec(UP, Kind.GAUGE, "1 if the engine's last /metrics scrape succeeded, else 0.",
               ("engine",)),
    MetricSpec(CRASHES, Kind.COUNTER, "Engine crash incidents by root-cause signature (one per "
               "chain of crash lines, not per line).", ("engine", "signature")),
)  # fmt: skip

ENGINE_METRIC_HELP: Final[dict[str, MetricSpec]] = {spec.name: spec for spec in ENGINE_METRICS}

SCRAPE_ERRORS: Final = "inferwatch_engine_scrape_parse_errors_total"


def describe_engine_metrics(store: SeriesStore) -> None:
    for spec in ENGINE_METRICS:
        store.describe(spec.name, spec.kind, spec.help)
    describe_thresholds(store)
    store.describe(SCRAPE_ERRORS, Kind.COUNTER, "Engine /metrics bodies that could not be parsed.")
