"""The typed records an engine log line parses to (issue "Engine pipeline").

Every record carries `type` (a constant), the line's `prefix`, and its own typed fields;
`to_dict()` gives the field names of shared/corpus/engine-lines.expect.jsonl and replay's JSON
lines (DESIGN.md section 4). Units: rates in percent (`*_pct`), throughputs in tokens/s, memory in
GiB, durations in the unit the field name says. A value the line does not carry is None.

Records are named tuples, immutable: made, pickled and rebuilt in one step each (replay's scan
workers send thousands to the replay process), where a frozen dataclass sets each field through
``object.__setattr__``.
"""

# No ``from __future__ import annotations`` here: a named tuple's string annotations each cost a
# compile() at import (typing.ForwardRef); evaluated ones cost nothing, and the scan workers
# fork only once the parsers are imported.
import math
from typing import Literal, NamedTuple, TypeAlias

from inferwatch.parsers.engine_prefix import LinePrefix

__all__ = [
    "CRASH_SIGNATURES",
    "FAULT_SIGNATURES",
    "INCIDENT_SIGNATURES",
    "OTHER_KINDS",
    "STOP_EXIT_CODES",
    "AccessLog",
    "EngineCrash",
    "EngineRecord",
    "EngineStats",
    "OtherLine",
    "SpecDecode",
    "StartupFact",
    "is_fault",
    "stopped_on_purpose",
    "to_float",
    "to_int",
]

CRASH_SIGNATURES = frozenset(
    {
        "fatal_error", "startup_failed", "output_handler_failed", "engine_dead", "engine_died",
        "illegal_memory_access", "cuda_oom", "npu_oom", "nccl", "iteration_timeout",
        "assertion", "exception", "worker_died", "worker_exception",
    }
)  # fmt: skip
"""Every `EngineCrash.signature` (shared/corpus/README.md)."""

INCIDENT_SIGNATURES = frozenset(
    {
        "fatal_error", "startup_failed", "engine_died", "output_handler_failed", "engine_dead",
        "worker_died",
    }
)  # fmt: skip
"""Signatures that open one crash incident (engine.md 5.1 "Grouping"); others are root causes."""

FAULT_SIGNATURES = INCIDENT_SIGNATURES | {
    "illegal_memory_access", "cuda_oom", "npu_oom", "nccl", "iteration_timeout",
}  # fmt: skip
"""Signatures that mean the engine is dead or dying wherever they appear (a process that died
of a stop signal aside: :func:`stopped_on_purpose`)."""

STOP_EXIT_CODES = frozenset({-1, -2, -15})
"""Exit codes of a process ended by SIGHUP, SIGINT or SIGTERM: what ``systemctl stop``, ``docker
stop`` or Ctrl-C send to every process of the engine, so a worker dying of one is no crash by
itself (SIGKILL, -9, is the OOM killer's; SIGABRT, -6, and SIGSEGV, -11, are crashes)."""


def stopped_on_purpose(crash: "EngineCrash") -> bool:
    """Whether ``crash`` reports a process that died of a stop signal (``STOP_EXIT_CODES``)."""
    return crash.exit_code in STOP_EXIT_CODES


def is_fault(crash: "EngineCrash") -> bool:
    """Whether the line alone says the engine is dead or dying (``FAULT_SIGNATURES``)."""
    return crash.signature in FAULT_SIGNATURES and not stopped_on_purpose(crash)


OTHER_KINDS = frozenset(
    {
        "traceback", "cuda_error_detail", "heartbeat", "teardown", "server_shutdown",
        "crash_dump", "request_error", "shm_broadcast_wait", "warning", "foreign_format",
    }
)  # fmt: skip


def to_float(text: str) -> float | None:
    """The leading number of `6335.3 tokens/s`, `62.8%`, `2.48x`, `2,042,016`; None when there
    is none or it is not finite (a printed `nan` means nothing was measured: unknown)."""
    token = text.strip().split(" ", 1)[0].rstrip("%x").replace(",", "")
    try:
        value = float(token)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def to_int(text: str) -> int | None:
    """The leading integer of `9 reqs`, `495 tokens`, `2,042,016`; None when there is none."""
    token = text.strip().split(" ", 1)[0].replace(",", "")
    try:
        return int(token)
    except ValueError:
        return None


def _listify(value: object) -> object:
    return list(value) if isinstance(value, tuple) else value


class EngineStats(NamedTuple):
    """A periodic stats line: vLLM V0/V1 "Avg prompt throughput …" or SGLang Decode/Prefill batch.

    `format` is "vllm_v1", "vllm_v0", "sglang_decode", "sglang_prefill", or "vllm_v0_prefix_cache"
    for V0's separate `Prefix cache hit rate: GPU: x%, CPU: y%` line, which belongs to the stats
    line just before it (``derive.engine.log`` puts its rate on that line's window). `waiting`
    is V1 Waiting, V0 Pending, SGLang `#queue-req`. `kv_usage_pct` is percent (SGLang `token
    usage` x 100). `dp_rank` is the index in `Engine NNN:`; `aggregated_engines` the N of
    `N Engines Aggregated:` (sums/means).
    """

    @property
    def type(self) -> Literal["engine_stats"]:
        return "engine_stats"

    prefix: LinePrefix
    format: str
    dp_rank: int | None = None
    prompt_tps: float | None = None
    gen_tps: float | None = None
    running: int | None = None
    waiting: int | None = None
    kv_usage_pct: float | None = None
    prefix_cache_hit_pct: float | None = None
    swapped: int | None = None
    cpu_kv_usage_pct: float | None = None
    cpu_prefix_cache_hit_pct: float | None = None
    deferred: int | None = None
    preemptions: int | None = None
    corrupted: int | None = None
    external_prefix_cache_hit_pct: float | None = None
    mm_cache_hit_pct: float | None = None
    aggregated_engines: int | None = None
    token_usage: float | None = None
    tokens_in_use: int | None = None
    mal: float | None = None
    accept_rate: float | None = None
    cuda_graph: bool | None = None
    new_seqs: int | None = None
    new_tokens: int | None = None
    cached_tokens: int | None = None
    retracted_reqs: int | None = None
    prealloc_reqs: int | None = None
    transfer_reqs: int | None = None
    prealloc_usage: float | None = None

    def to_dict(self, *, prefix: bool = True) -> dict[str, object]:
        out: dict[str, object] = {"type": self.type, "format": self.format}
        always = _STATS_ALWAYS.get(self.format, _STATS_CORE)
        for name in _STATS_FIELDS:
            value = getattr(self, name)
            if value is not None or name in always:
                out[name] = value
        if prefix:
            out["prefix"] = self.prefix.to_dict()
        return out


_STATS_CORE = (
    "dp_rank", "prompt_tps", "gen_tps", "running", "waiting", "kv_usage_pct",
    "prefix_cache_hit_pct",
)  # fmt: skip
_STATS_ALWAYS: dict[str, tuple[str, ...]] = {
    "vllm_v0": (*_STATS_CORE, "swapped", "cpu_kv_usage_pct"),
    "sglang_decode": (*_STATS_CORE, "token_usage", "tokens_in_use", "mal", "accept_rate",
                      "cuda_graph"),
    "sglang_prefill": (*_STATS_CORE, "token_usage", "new_seqs", "new_tokens", "cached_tokens",
                       "cuda_graph"),
}  # fmt: skip
_STATS_FIELDS = tuple(f for f in EngineStats._fields if f not in ("prefix", "format"))


class SpecDecode(NamedTuple):
    """A speculative-decoding line (engine.md section 3), every generation in one shape.

    `format`: "vllm_v1_gen3", "vllm_v1_gen2", "vllm_v1_transitional", "vllm_v1_gen1",
    "vllm_v1_early", "vllm_v0", or "llamacpp" (one request's `draft acceptance rate = …`).
    `mal` as printed, None where the line prints none (V0 never does: its MAL, emitted /
    (drafted / k), is a derivation, ``derive.engine.spec.line_mal``). `draft_acceptance_pct`
    always percent; a printed `nan` becomes None, as does a per-position list containing `nan`.
    The tokens/s fields are diluted across idle gaps: use the counts. `cumulative` is true for
    V0, whose counts run since engine start.
    """

    @property
    def type(self) -> Literal["spec_decode"]:
        return "spec_decode"

    prefix: LinePrefix
    format: str
    mal: float | None = None
    accepted: int | None = None
    drafted: int | None = None
    per_position: tuple[float, ...] | None = None
    k: int | None = None
    draft_acceptance_pct: float | None = None
    accepted_tps: float | None = None
    drafted_tps: float | None = None
    cumulative: bool = False
    emitted: int | None = None
    system_efficiency: float | None = None

    def to_dict(self, *, prefix: bool = True) -> dict[str, object]:
        out: dict[str, object] = {"type": self.type, "format": self.format}
        for name in _SPEC_FIELDS:
            value = getattr(self, name)
            if value is not None or name not in ("emitted", "system_efficiency"):
                out[name] = _listify(value)
        if prefix:
            out["prefix"] = self.prefix.to_dict()
        return out


_SPEC_FIELDS = tuple(f for f in SpecDecode._fields if f not in ("prefix", "format"))


class EngineCrash(NamedTuple):
    """A crash or fault line (engine.md section 5); `signature` is one of CRASH_SIGNATURES.

    `exception` is the class exactly as printed when the line is an `Exception: message` line;
    `message` the text after it (or the whole message), cut to a bounded length. A crash line
    on its own is a candidate: `TracebackGrouper` makes incidents of blocks. `gpu` is the index
    a CUDA OOM names; `exit_code` the one a dead process's line reports (negative: the signal).
    """

    @property
    def type(self) -> Literal["engine_crash"]:
        return "engine_crash"

    prefix: LinePrefix
    signature: str
    exception: str | None = None
    message: str = ""
    gpu: int | None = None
    rank: int | None = None
    timeout_ms: int | None = None
    ran_for_ms: int | None = None
    engine_proc: str | None = None
    max_seq_len: int | None = None
    kv_cache_tokens: int | None = None
    exit_code: int | None = None

    def to_dict(self, *, prefix: bool = True) -> dict[str, object]:
        out: dict[str, object] = {"type": self.type, "signature": self.signature}
        for name in _CRASH_FIELDS:
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        if prefix:
            out["prefix"] = self.prefix.to_dict()
        return out


_CRASH_FIELDS = tuple(f for f in EngineCrash._fields if f not in ("prefix", "signature"))


class StartupFact(NamedTuple):
    """A start-up fact (engine.md section 6); `event` names it, the fields it carries are set.

    `STARTUP_FIELDS[event]` lists them (shared/corpus/README.md "startup"). Numbers are in the
    units printed: GiB, seconds, milliseconds, tokens; thousands separators removed.
    """

    @property
    def type(self) -> Literal["startup"]:
        return "startup"

    prefix: LinePrefix
    event: str
    kv_cache_tokens: int | None = None
    max_concurrency: float | None = None
    tokens_per_request: int | None = None
    num_gpu_blocks: int | None = None
    num_cpu_blocks: int | None = None
    dp_rank: int | None = None
    kv_cache_memory_gib: float | None = None
    total_gpu_memory_gib: float | None = None
    gpu_memory_utilization: float | None = None
    seconds: float | None = None
    memory_gib: float | None = None
    milliseconds: float | None = None
    version: str | None = None
    model: str | None = None
    url: str | None = None
    route: str | None = None
    methods: tuple[str, ...] | None = None
    tasks: tuple[str, ...] | None = None
    path: str | None = None
    pid: int | None = None

    def to_dict(self, *, prefix: bool = True) -> dict[str, object]:
        out: dict[str, object] = {"type": self.type, "event": self.event}
        always = STARTUP_FIELDS.get(self.event, ())
        for name in _STARTUP_FIELDS:
            value = getattr(self, name)
            if value is not None or name in always:
                out[name] = _listify(value)
        if prefix:
            out["prefix"] = self.prefix.to_dict()
        return out


STARTUP_FIELDS: dict[str, tuple[str, ...]] = {
    "kv_cache_size": ("kv_cache_tokens",),
    "max_concurrency": ("max_concurrency", "tokens_per_request"),
    "gpu_blocks": ("num_gpu_blocks", "num_cpu_blocks"),
    "cache_config_info": ("dp_rank", "num_gpu_blocks"),
    "kv_cache_memory": ("kv_cache_memory_gib",),
    "memory_profile": ("total_gpu_memory_gib", "kv_cache_memory_gib", "gpu_memory_utilization"),
    "torch_compile": ("seconds",),
    "init_engine": ("seconds",),
    "graph_capture": ("seconds", "memory_gib"),
    "model_loading": ("seconds", "memory_gib"),
    "version": ("version",),
    "engine_config": ("model",),
    "api_server_starting": ("url",),
    "route": ("route", "methods"),
    "supported_tasks": ("tasks",),
    "prometheus_multiproc_dir": ("path",),
    "server_process_started": ("pid",),
    "chat_template_warmup": ("milliseconds",),
    "routes_header": (),
    "waiting_app_startup": (),
    "app_startup_complete": (),
    "engine_core_ready": (),
    "engine_waiting_frontend": (),
    "server_ready": (),
}
"""Start-up events and the fields each one always carries (null when the line lacks one)."""

_STARTUP_FIELDS = tuple(f for f in StartupFact._fields if f not in ("prefix", "event"))


class AccessLog(NamedTuple):
    """A uvicorn access line: `<ip>:<port> - "<METHOD> <path> HTTP/<ver>" <status> <reason>`."""

    @property
    def type(self) -> Literal["access"]:
        return "access"

    prefix: LinePrefix
    client: str
    method: str
    path: str
    status: int

    def to_dict(self, *, prefix: bool = True) -> dict[str, object]:
        out: dict[str, object] = {
            "type": self.type, "client": self.client, "method": self.method, "path": self.path,
            "status": self.status,
        }  # fmt: skip
        if prefix:
            out["prefix"] = self.prefix.to_dict()
        return out


class OtherLine(NamedTuple):
    """A recognised line that is none of the above; `kind` is one of OTHER_KINDS.

    `text` is the message body (bounded), kept for grouping; it is not part of `to_dict()`.
    """

    @property
    def type(self) -> Literal["other"]:
        return "other"

    prefix: LinePrefix
    kind: str
    text: str = ""

    def to_dict(self, *, prefix: bool = True) -> dict[str, object]:
        out: dict[str, object] = {"type": self.type, "kind": self.kind}
        if prefix:
            out["prefix"] = self.prefix.to_dict()
        return out


EngineRecord: TypeAlias = (
    EngineStats | SpecDecode | EngineCrash | StartupFact | AccessLog | OtherLine
)
