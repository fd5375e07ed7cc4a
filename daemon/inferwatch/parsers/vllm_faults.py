"""Crash, fault and other known lines of vLLM logs (reference/engine.md sections 1.6, 5).

`parse_fault` finds the crash signatures of engine.md 5.1/5.2 (and SGLang's start-up failure)
plus the `other` kinds that have a fixed text (CUDA error hints, heartbeat, teardown, shutdown,
crash dumps, request errors, the shared-memory hang hint, traceback structure). `fallback_other`
is asked last, after start-up facts: indented traceback code, warnings, foreign formats. Pure.
"""

from __future__ import annotations

import re

from inferwatch.parsers.engine_prefix import LinePrefix
from inferwatch.parsers.engine_records import EngineCrash, OtherLine, to_int
from inferwatch.parsers.engine_text import clean_message

__all__ = [
    "ANCHORS",
    "PROCESS_HEADER",
    "STEP_FRAMES",
    "TRACEBACK_STARTS",
    "fallback_other",
    "parse_fault",
]

_HEAD = 600
_MESSAGE_MAX = 500

# `torch.AcceleratorError: …`, `vllm.v1.engine.exceptions.EngineDeadError: …`, `RuntimeError('…')`.
_EXCEPTION = re.compile(r"([A-Za-z_](?:[\w.]|::)*(?:Error|Exception|Failed))(?::\s*|\(|$)")
# Checked in this order; the first anchor found in the message names the signature.
_CRASH_ANCHORS: tuple[tuple[str, str], ...] = (
    ("EngineCore encountered a fatal error", "fatal_error"),
    ("EngineCore failed to start", "startup_failed"),
    ("output_handler failed", "output_handler_failed"),
    ("died unexpectedly", "engine_died"),
    # V0 `Worker VllmWorkerProcess pid <int> died, exit code: <int>`; V1 `MulitprocExecutor got
    # fatal signal from worker processes, …` (sic), later `Got fatal signal from worker …`.
    (" died, exit code", "worker_died"),
    ("fatal signal from worker processes", "worker_died"),
    # V1 worker: an exception in an RPC; fatal when it was a model step (engine_grouper).
    ("WorkerProc hit an exception", "worker_exception"),
    ("WorkerProc failed to start", "startup_failed"),
    ("illegal memory access", "illegal_memory_access"),
    ("CUDA out of memory", "cuda_oom"),
    ("NPU out of memory", "npu_oom"),
    ("NCCL error", "nccl"),
    ("Watchdog caught collective operation timeout", "nccl"),
    ("Timeout at NCCL work", "nccl"),
    ("Engine iteration timed out", "iteration_timeout"),
    ("Engine background task failed", "engine_dead"),
    ("EngineDeadError", "engine_dead"),
    ("INTERNAL ASSERT FAILED", "assertion"),
    ("AssertionError", "assertion"),
    ("that can be stored in KV cache", "startup_failed"),
    ("larger than the available KV cache memory", "startup_failed"),
    ("Initialization failed. warmup error", "startup_failed"),  # SGLang
    ("KV cache pool leak detected", "exception"),  # SGLang memory bug
)
# Levels at which a bare `SomeError: …` line is not treated as a crash candidate.
_QUIET_LEVELS = frozenset({"DEBUG", "INFO", "WARNING"})

_GPU = re.compile(r"GPU (\d+) has a total capac")
_RANK = re.compile(r"\[Rank (\d+)\]")
_TIMEOUT_MS = re.compile(r"Timeout\(ms\)=(\d+)")
_RAN_FOR = re.compile(r"ran for (\d+) milliseconds")
_DIED = re.compile(r"(?:proc|process) (\S+) died unexpectedly")
_EXIT_CODE = re.compile(r"exit ?code:? (-?\d+)")
_KV_TOO_SMALL = re.compile(r"max seq len \((\d+)\) is larger than .*? KV cache \((\d+)\)")

TRACEBACK_STARTS = (
    "Traceback (most recent call last)",
    'File "',
    "The above exception was the direct cause",
    "During handling of the above exception",
    "Exception in ",
    "Exception raised from ",
)
PROCESS_HEADER = re.compile(r"Process [\w.:-]+:\s*$")
# Traceback frames of a model step: a worker exception under one of them kills the engine (the
# executor re-raises it in the engine core's busy loop); under another RPC (adding a LoRA
# adapter, profiling) the engine answers that request with an error and lives on.
STEP_FRAMES = (" in execute_model", " in sample_tokens", " in execute_dummy_batch")
_OTHER_ANCHORS: tuple[tuple[str, str], ...] = (
    ("Search for `cuda", "cuda_error_detail"),
    ("CUDA kernel errors might be asynchronously reported", "cuda_error_detail"),
    ("CUDA_LAUNCH_BLOCKING=1", "cuda_error_detail"),
    ("TORCH_USE_CUDA_DSA", "cuda_error_detail"),
    ("To avoid data inconsistency, we are taking the entire process down", "cuda_error_detail"),
    ("Some NCCL operations have failed or timed out", "cuda_error_detail"),
    ("Heartbeat successful", "heartbeat"),
    ("Waiting for output from MQLLMEngine", "heartbeat"),
    ("terminating worker", "teardown"),
    ("WorkerProc shutting down", "teardown"),
    ("Coordinator process exiting", "teardown"),
    ("Shutting down FastAPI HTTP server", "server_shutdown"),
    ("Dumping input data", "crash_dump"),
    ("Dumping scheduler output", "crash_dump"),
    ("Dumping scheduler stats", "crash_dump"),
    ("No available shared memory broadcast block found", "shm_broadcast_wait"),
    ("No available block found in", "shm_broadcast_wait"),
    ("Error in chat completion stream generator", "request_error"),
)
# uvicorn's own shutdown lines (the message is the whole body).
_UVICORN_SHUTDOWN = (
    "Shutting down",
    "Waiting for application shutdown.",
    "Application shutdown complete.",
    "Finished server process",
)
# Every text a line must contain to become one of this module's records, for the whole-file
# scanner (engine_precheck); lines without one are exception lines or traceback code.
ANCHORS: tuple[str, ...] = (
    *(anchor for anchor, _ in _CRASH_ANCHORS),
    *(anchor for anchor, _ in _OTHER_ANCHORS),
    *TRACEBACK_STARTS,
    *_UVICORN_SHUTDOWN,
)
_PY_WARNING = re.compile(r"\b\w*Warning: ")


def _crash(prefix: LinePrefix, signature: str, exception: str | None, message: str,
           head: str) -> EngineCrash:  # fmt: skip
    gpu = rank = timeout_ms = ran_for_ms = max_seq_len = kv_tokens = exit_code = None
    engine_proc = None
    if signature == "cuda_oom":
        m = _GPU.search(head)
        gpu = to_int(m.group(1)) if m else None
    elif signature == "nccl":
        m = _RANK.search(head)
        rank = to_int(m.group(1)) if m else prefix.rank
        m = _TIMEOUT_MS.search(head)
        timeout_ms = to_int(m.group(1)) if m else None
        m = _RAN_FOR.search(head)
        ran_for_ms = to_int(m.group(1)) if m else None
    elif signature == "engine_died":
        m = _DIED.search(head)
        engine_proc = m.group(1) if m else None
    if signature in ("engine_died", "worker_died"):
        m = _EXIT_CODE.search(head)
        exit_code = to_int(m.group(1)) if m else None
    elif signature == "startup_failed":
        m = _KV_TOO_SMALL.search(head)
        if m is not None:
            max_seq_len, kv_tokens = to_int(m.group(1)), to_int(m.group(2))
    return EngineCrash(
        prefix,
        signature,
        exception=exception,
        message=clean_message(message[:_MESSAGE_MAX]),
        gpu=gpu,
        rank=rank,
        timeout_ms=timeout_ms,
        ran_for_ms=ran_for_ms,
        engine_proc=engine_proc,
        max_seq_len=max_seq_len,
        kv_cache_tokens=kv_tokens,
        exit_code=exit_code,
    )


def parse_fault(prefix: LinePrefix, body: str) -> EngineCrash | OtherLine | None:
    """A crash signature, or one of the fixed-text `other` kinds; None when neither."""
    text = body.lstrip()
    head = text[:_HEAD]
    if not head:
        return None
    exception = None
    message = text
    first = head[0]
    if first.isalpha() or first == "_":
        m = _EXCEPTION.match(head)
        if m is not None:
            exception = m.group(1)
            message = text[m.end() :]
    for anchor, signature in _CRASH_ANCHORS:
        if anchor in head:
            return _crash(prefix, signature, exception, message, head)
    if exception is not None and prefix.level not in _QUIET_LEVELS:
        return _crash(prefix, "exception", exception, message, head)
    if head.startswith(TRACEBACK_STARTS) or PROCESS_HEADER.match(head) is not None:
        return OtherLine(prefix, "traceback", head)
    for anchor, kind in _OTHER_ANCHORS:
        if anchor in head:
            return OtherLine(prefix, kind, head)
    if head.startswith("Error in "):
        return OtherLine(prefix, "request_error", head)
    if prefix.header in ("uvicorn", "sglang") and head.startswith(_UVICORN_SHUTDOWN):
        return OtherLine(prefix, "server_shutdown", head)
    return None


def fallback_other(prefix: LinePrefix, body: str) -> OtherLine | None:
    """Asked last: indented traceback code at ERROR (or without a level), warnings, and
    another library's format inside a vLLM process tag; None for everything else."""
    if not body or body.isspace():
        return None
    head = body[:_HEAD]
    if head.startswith(("  ", "\t")) and prefix.level in (None, "ERROR", "CRITICAL"):
        return OtherLine(prefix, "traceback", head.strip())
    if prefix.level == "WARNING" or ("Warning: " in head and _PY_WARNING.search(head)):
        return OtherLine(prefix, "warning", head.strip())
    if prefix.header == "foreign" and prefix.proc is not None:
        return OtherLine(prefix, "foreign_format", head.strip())
    return None
