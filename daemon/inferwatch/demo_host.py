"""A simulated inference host for ``inferwatch demo``: a vLLM engine writing its log (rotated by
a real ``RotatingFileHandler``) and two GPUs' readings, with numbers modelled on host A of
reference/host.md (step rate ~36/s, MAL 2.5-3.1 on prose, 4-5 on patterned content).

Only writers live here; the daemon reads what they write through its real sources.
"""

from __future__ import annotations

import json
import logging
import logging.handlers
import math
import os
import random
import time
from dataclasses import dataclass
from pathlib import Path

ENGINE_PID = 4242
_VLLM_HEADER = "(APIServer pid={pid}) INFO {ts} [loggers.py:{line}] "


@dataclass(frozen=True, slots=True)
class Phase:
    """A stretch of the scenario: how many requests run and what content they decode."""

    name: str
    windows: int
    running: int
    mal: float  # mean acceptance length of the content
    step_rate: float  # steps per second: the stack's speed


SCENARIO: tuple[Phase, ...] = (
    Phase("idle", 2, 0, 0.0, 0.0),
    Phase("prose, one stream", 8, 1, 2.8, 36.0),
    Phase("benchmark, one stream", 6, 1, 4.6, 36.0),
    Phase("prose, three streams", 4, 3, 2.6, 24.0),
    Phase("idle", 2, 0, 0.0, 0.0),
)


def engine_logger(path: Path, max_bytes: int = 6000) -> logging.Logger:
    """A logger writing plain lines to ``path``, rotated by rename like many engine setups."""
    logger = logging.getLogger(f"inferwatch.demo.engine.{path}")
    logger.handlers.clear()
    logger.propagate = False
    handler = logging.handlers.RotatingFileHandler(path, maxBytes=max_bytes, backupCount=3)
    handler.setFormatter(logging.Formatter("%(message)s"))
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    return logger


def stats_lines(phase: Phase, now: float, rng: random.Random, k: int = 4) -> list[str]:
    """The stats line and, when drafting happened, the SpecDecoding line of one 10-s window."""
    ts = time.strftime("%m-%d %H:%M:%S", time.localtime(now))
    head = _VLLM_HEADER.format(pid=ENGINE_PID, ts=ts, line=134)
    window = 10.0
    steps = phase.step_rate * window * (1 + rng.uniform(-0.03, 0.03))
    mal = phase.mal * (1 + rng.uniform(-0.05, 0.05)) if phase.running else 0.0
    gen = steps * mal * max(phase.running, 1) / window if phase.running else 0.0
    prompt = rng.uniform(0, 80.0) if phase.running else 0.0
    kv = 2.0 + 1.5 * phase.running + rng.uniform(0, 1)
    lines = [
        f"{head}Engine 000: Avg prompt throughput: {prompt:.1f} tokens/s, "
        f"Avg generation throughput: {gen:.1f} tokens/s, Running: {phase.running} reqs, "
        f"Waiting: 0 reqs, GPU KV cache usage: {kv:.1f}%, Prefix cache hit rate: 12.5%"
    ]
    if phase.running:
        drafts = round(steps * phase.running)
        accepted = round(drafts * (mal - 1))
        drafted = drafts * k
        per_pos = _per_position(accepted / drafts, k)
        lines.append(
            f"{head}SpecDecoding metrics: Mean acceptance length: {1 + accepted / drafts:.2f}, "
            f"Accepted throughput: {accepted / window:.2f} tokens/s, "
            f"Drafted throughput: {drafted / window:.2f} tokens/s, Accepted: {accepted} tokens, "
            f"Drafted: {drafted} tokens, Per-position acceptance rate: "
            + ", ".join(f"{p:.3f}" for p in per_pos)
            + f", Avg Draft acceptance rate: {100 * accepted / drafted:.1f}%"
        )
    return lines


def crash_lines(now: float) -> list[str]:
    """A worker's CUDA illegal memory access and the engine core's death, as vLLM logs them: the
    demo's crash, which pages (EngineCrashed) and keeps firing for five minutes."""
    ts = time.strftime("%m-%d %H:%M:%S", time.localtime(now))
    worker = f"(Worker_PP0 pid={ENGINE_PID + 1}) ERROR {ts} [multiproc_executor.py:1007] "
    return [
        f"{worker}torch.AcceleratorError: CUDA error: an illegal memory access was encountered",
        f"(EngineCore pid={ENGINE_PID}) ERROR {ts} [core.py:1240] EngineCore failed to start.",
    ]


def _per_position(mean_accepted: float, k: int) -> list[float]:
    """Acceptance falling with position, summing to the accepted tokens per draft."""
    decay = 0.8
    weights = [decay**i for i in range(k)]
    scale = mean_accepted / sum(weights)
    return [min(1.0, w * scale) for w in weights]


def gpu_readings(now: float, busy: bool) -> dict[str, object]:
    """Two CMP 170HX cards at a locked 1395 MHz SM clock, warmer and hungrier when busy."""
    gpus = []
    for i, bus in enumerate(("0000:03:00.0", "0000:04:00.0")):
        wobble = math.sin(now / 7 + i)
        gpus.append(
            {
                "index": i,
                "uuid": f"GPU-5f0e6c2a-11d3-4b6c-9a2e-00000000000{i}",
                "pci_bus_id": bus,
                "name": "NVIDIA CMP 170HX",
                "temperature_celsius": (66 if busy else 41) + 2 * wobble + i,
                "power_watts": (235 if busy else 48) + 10 * wobble,
                "utilization_ratio": 0.97 if busy else 0.0,
                "memory_used_bytes": 7.6 * 2**30,
                "memory_total_bytes": 8 * 2**30,
                "sm_clock_hertz": 1395e6 if busy else 210e6,
                "mem_clock_hertz": 1458e6,
            }
        )
    return {"gpus": gpus}


def write_json_atomic(path: Path, doc: object) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(doc), encoding="utf-8")
    tmp.replace(path)
