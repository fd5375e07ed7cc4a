"""vLLM (and uvicorn) start-up facts: reference/engine.md section 6.

`parse_startup` looks for each fact's fixed anchor text in the message, then reads its numbers
with one small regex. Events and the fields they carry: `engine_records.STARTUP_FIELDS`.
Thousands separators are removed; units stay as printed. Pure.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from inferwatch.parsers.engine_prefix import LinePrefix
from inferwatch.parsers.engine_records import StartupFact, to_float, to_int

__all__ = ["ANCHORS", "parse_startup"]

_HEAD = 600

_KV_SIZE = re.compile(r"GPU KV cache size: ([\d,]+) tokens")
_CONCURRENCY = re.compile(r"Maximum concurrency for ([\d,]+) tokens per request: ([\d.]+)x")
_BLOCKS = re.compile(r"# GPU blocks: (\d+)(?:, # CPU blocks: (\d+))?")
_CACHE_INFO = re.compile(
    r"(?:Engine (\d+): )?vllm cache_config_info with initialization after num_gpu_blocks is: (\d+)"
)
_KV_MEMORY = re.compile(r"Available KV cache memory: ([\d.]+) ?GiB")
_KV_MEMORY_V0 = re.compile(r"reserved for KV Cache is ([\d.]+) ?GiB")
_PROFILE_KV = re.compile(r"\b(total_gpu_memory|kv_cache_size|gpu_memory_utilization)=([\d.]+)")
_PROFILE_V0 = re.compile(
    r"total_gpu_memory \(([\d.]+) ?GiB\) x gpu_memory_utilization \(([\d.]+)\)"
)
_COMPILE = re.compile(r"torch\.compile takes ([\d.]+) s in total")
_INIT = re.compile(r"init engine \([^)]*\) took ([\d.]+) s")
_GRAPH = re.compile(r"Graph capturing finished in ([\d.]+) secs?(?:, took ([\d.]+) ?GiB)?")
_LOADING = re.compile(r"Model loading took ([\d.]+) ?Gi?B(?: memory)? and ([\d.]+) s")
_LOADING_OLD = re.compile(r"Loading model weights took ([\d.]+) ?Gi?B")
_VERSION = re.compile(r"vLLM API server version (\S+)")
_ENGINE = re.compile(r"Initializing an? (?:V\d )?LLM engine (?:\(v([^)\s]+)\) )?with config:")
_MODEL = re.compile(r"\bmodel='([^']*)'")
_SERVER = re.compile(r"Starting vLLM (?:API )?server(?: \d+)? on (\S+)")
_ROUTE = re.compile(r"Route: (\S+?),? Methods: ([A-Z][A-Z, ]*)")
_QUOTED = re.compile(r"'([^']*)'|\"([^\"]*)\"")
_PROMETHEUS = re.compile(r"vLLM to use (\S+) as PROMETHEUS_MULTIPROC_DIR")
_SERVER_PID = re.compile(r"Started server process \[(\d+)\]")
_CHAT_WARMUP = re.compile(r"Chat template warmup completed in ([\d.]+) ?(ms|s)\b")
_CORE_READY = re.compile(r"Core engine process (\d+) ready")

_FIXED: tuple[tuple[str, str], ...] = (
    ("Available routes are:", "routes_header"),
    ("Waiting for application startup.", "waiting_app_startup"),
    ("Application startup complete.", "app_startup_complete"),
    ("Waiting for init message from front-end", "engine_waiting_frontend"),
)

_Handler = Callable[[LinePrefix, str], StartupFact | None]


def _kv_size(p: LinePrefix, s: str) -> StartupFact | None:
    m = _KV_SIZE.search(s)
    return StartupFact(p, "kv_cache_size", kv_cache_tokens=to_int(m.group(1))) if m else None


def _concurrency(p: LinePrefix, s: str) -> StartupFact | None:
    m = _CONCURRENCY.search(s)
    if m is None:
        return None
    return StartupFact(
        p, "max_concurrency", max_concurrency=to_float(m.group(2)),
        tokens_per_request=to_int(m.group(1)),
    )  # fmt: skip


def _blocks(p: LinePrefix, s: str) -> StartupFact | None:
    m = _BLOCKS.search(s)
    if m is None:
        return None
    cpu = to_int(m.group(2)) if m.group(2) else None
    return StartupFact(p, "gpu_blocks", num_gpu_blocks=to_int(m.group(1)), num_cpu_blocks=cpu)


def _cache_info(p: LinePrefix, s: str) -> StartupFact | None:
    m = _CACHE_INFO.search(s)
    if m is None:
        return None
    dp = to_int(m.group(1)) if m.group(1) else None
    return StartupFact(p, "cache_config_info", dp_rank=dp, num_gpu_blocks=to_int(m.group(2)))


def _kv_memory(p: LinePrefix, s: str) -> StartupFact | None:
    m = _KV_MEMORY.search(s) or _KV_MEMORY_V0.search(s)
    return (
        StartupFact(p, "kv_cache_memory", kv_cache_memory_gib=to_float(m.group(1))) if m else None
    )


def _memory_profile(p: LinePrefix, s: str) -> StartupFact | None:
    m = _PROFILE_V0.search(s)
    if m is not None:
        return StartupFact(
            p, "memory_profile", total_gpu_memory_gib=to_float(m.group(1)),
            gpu_memory_utilization=to_float(m.group(2)),
        )  # fmt: skip
    values = {key: to_float(value) for key, value in _PROFILE_KV.findall(s)}
    if not values:
        return None
    return StartupFact(
        p,
        "memory_profile",
        total_gpu_memory_gib=values.get("total_gpu_memory"),
        kv_cache_memory_gib=values.get("kv_cache_size"),
        gpu_memory_utilization=values.get("gpu_memory_utilization"),
    )


def _seconds(event: str, pattern: re.Pattern[str]) -> _Handler:
    def handler(p: LinePrefix, s: str) -> StartupFact | None:
        m = pattern.search(s)
        return StartupFact(p, event, seconds=to_float(m.group(1))) if m else None

    return handler


def _graph(p: LinePrefix, s: str) -> StartupFact | None:
    m = _GRAPH.search(s)
    if m is None:
        return None
    memory = to_float(m.group(2)) if m.group(2) else None
    return StartupFact(p, "graph_capture", seconds=to_float(m.group(1)), memory_gib=memory)


def _loading(p: LinePrefix, s: str) -> StartupFact | None:
    m = _LOADING.search(s)
    if m is not None:
        return StartupFact(
            p, "model_loading", seconds=to_float(m.group(2)), memory_gib=to_float(m.group(1))
        )
    m = _LOADING_OLD.search(s)
    return StartupFact(p, "model_loading", memory_gib=to_float(m.group(1))) if m else None


def _version(p: LinePrefix, s: str) -> StartupFact | None:
    m = _VERSION.search(s)
    return StartupFact(p, "version", version=m.group(1)) if m else None


def _engine_config(p: LinePrefix, s: str) -> StartupFact | None:
    m = _ENGINE.search(s)
    if m is None:
        return None
    model = _MODEL.search(s, m.end())
    return StartupFact(
        p, "engine_config", model=model.group(1) if model else None, version=m.group(1)
    )


def _server(p: LinePrefix, s: str) -> StartupFact | None:
    m = _SERVER.search(s)
    return StartupFact(p, "api_server_starting", url=m.group(1)) if m else None


def _route(p: LinePrefix, s: str) -> StartupFact | None:
    m = _ROUTE.search(s)
    if m is None:
        return None
    methods = tuple(x.strip() for x in m.group(2).split(",") if x.strip())
    return StartupFact(p, "route", route=m.group(1), methods=methods)


def _tasks(p: LinePrefix, s: str) -> StartupFact | None:
    at = s.find("Supported tasks:")
    tasks = tuple(a or b for a, b in _QUOTED.findall(s, at))
    return StartupFact(p, "supported_tasks", tasks=tasks)


def _prometheus(p: LinePrefix, s: str) -> StartupFact | None:
    m = _PROMETHEUS.search(s)
    return StartupFact(p, "prometheus_multiproc_dir", path=m.group(1)) if m else None


def _server_pid(p: LinePrefix, s: str) -> StartupFact | None:
    m = _SERVER_PID.search(s)
    return StartupFact(p, "server_process_started", pid=to_int(m.group(1))) if m else None


def _chat_warmup(p: LinePrefix, s: str) -> StartupFact | None:
    m = _CHAT_WARMUP.search(s)
    value = to_float(m.group(1)) if m else None
    if m is None or value is None:
        return None
    ms = value if m.group(2) == "ms" else value * 1000.0
    return StartupFact(p, "chat_template_warmup", milliseconds=ms)


def _core_ready(p: LinePrefix, s: str) -> StartupFact | None:
    m = _CORE_READY.search(s)
    return StartupFact(p, "engine_core_ready", dp_rank=to_int(m.group(1))) if m else None


# (anchor text, handler): the first anchor present whose handler returns a fact wins.
_HANDLERS: tuple[tuple[str, _Handler], ...] = (
    ("GPU KV cache size", _kv_size),
    ("Maximum concurrency for", _concurrency),
    ("# GPU blocks", _blocks),
    ("cache_config_info", _cache_info),
    ("KV cache memory", _kv_memory),
    ("reserved for KV Cache", _kv_memory),
    ("total_gpu_memory", _memory_profile),
    ("torch.compile takes", _seconds("torch_compile", _COMPILE)),
    ("init engine (", _seconds("init_engine", _INIT)),
    ("Graph capturing finished", _graph),
    ("Model loading took", _loading),
    ("Loading model weights took", _loading),
    ("vLLM API server version", _version),
    ("LLM engine", _engine_config),
    ("Starting vLLM", _server),
    ("Route: ", _route),
    ("Supported tasks:", _tasks),
    ("PROMETHEUS_MULTIPROC_DIR", _prometheus),
    ("Started server process", _server_pid),
    ("Chat template warmup completed", _chat_warmup),
    ("Core engine process", _core_ready),
)
# Every text a line must contain to become a start-up fact here, for the whole-file scanner
# (engine_precheck).
ANCHORS: tuple[str, ...] = tuple(anchor for anchor, _ in (*_FIXED, *_HANDLERS))


def parse_startup(prefix: LinePrefix, body: str) -> StartupFact | None:
    """The start-up fact this message states (searched in its first 600 characters), or None."""
    head = body[:_HEAD]
    for anchor, event in _FIXED:
        if anchor in head:
            return StartupFact(prefix, event)
    for anchor, handler in _HANDLERS:
        if anchor in head:
            fact = handler(prefix, head)
            if fact is not None:
                return fact
    return None
