"""CPU time per GPU poll cycle with 8 fake GPUs (tests/fixtures/nvml/8x-h100-sxm.json).

Measures what the daemon pays each `gpus.interval`: one poll of every GPU through the fake NVML
module (the same sampler code that reads pynvml), the conversion to samples, and the stale-series
bookkeeping of the source. The fake's own answering is included, so this is an upper bound of
inferwatch's share; a real driver adds its own call latency (bench/gpu_check.sh measures that).

usage: python bench/nvml_cost.py [CYCLES] [--json F]     (target: < 5 ms CPU per cycle)
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import time
from pathlib import Path

from inferwatch.clock import FakeClock
from inferwatch.sources.gpus import GpuSource, sampler_for

PROFILE = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "nvml" / "8x-h100-sxm.json"
TARGET_MS = 5.0


async def measure(cycles: int) -> tuple[list[float], list[float], int]:
    source = GpuSource(sampler_for("fake", PROFILE), FakeClock(0.0), call_timeout=30.0)
    await source.poll()  # first poll: identities, NOT_SUPPORTED learnt
    cpu, wall = [], []
    samples = 0
    for _ in range(cycles):
        c0, w0 = time.process_time(), time.perf_counter()
        batch = await source.poll()
        cpu.append((time.process_time() - c0) * 1000)
        wall.append((time.perf_counter() - w0) * 1000)
        samples = len(batch.samples)
    source.close()
    return cpu, wall, samples


def main() -> int:
    args = [a for a in sys.argv[1:] if not a.startswith("--json")]
    out = sys.argv[sys.argv.index("--json") + 1] if "--json" in sys.argv else None
    if out:
        args.remove(out)
    cycles = int(args[0]) if args else 500
    cpu, wall, samples = asyncio.run(measure(cycles))
    q = statistics.quantiles(cpu, n=100)
    print(f"8 fake GPUs ({PROFILE.name}), {cycles} poll cycles, {samples} samples per cycle")
    print("| measure | median | p95 | max |")
    print("|---|---|---|---|")
    print(f"| CPU ms per cycle | {statistics.median(cpu):.2f} | {q[94]:.2f} | {max(cpu):.2f} |")
    print(f"| wall ms per cycle | {statistics.median(wall):.2f} | "
          f"{statistics.quantiles(wall, n=100)[94]:.2f} | {max(wall):.2f} |")  # fmt: skip
    print(f"| CPU ms per GPU | {statistics.median(cpu) / 8:.3f} | {q[94] / 8:.3f} | "
          f"{max(cpu) / 8:.3f} |")  # fmt: skip
    ok = statistics.median(cpu) < TARGET_MS
    if out:
        doc = {"cycles": cycles, "samples": samples, "cpu_median_ms": statistics.median(cpu),
               "cpu_p95_ms": q[94], "wall_median_ms": statistics.median(wall)}  # fmt: skip
        Path(out).write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    print(f"target < {TARGET_MS} ms CPU per cycle (median): {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
