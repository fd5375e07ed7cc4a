#!/usr/bin/env bash
# On a machine with a real NVIDIA GPU: check inferwatch's NVML sampler against nvidia-smi.
#
#   bash bench/gpu_check.sh [SECONDS]        (default 30)
#
# 1. For SECONDS, once a second: one sampler poll (the daemon's code, through pynvml) and one
#    `nvidia-smi --query-gpu=…`, compared field by field (identity and limits exactly, moving
#    values within a tolerance, since the two read a few milliseconds apart).
# 2. Cost: CPU and wall milliseconds per poll cycle and per GPU.
# 3. `inferwatch nvml-snapshot` of this host saved as tests/fixtures/nvml/real-<model>.json.
# Prints a PASS/FAIL summary; exit 0 only when every comparison passed.
#
# Needs python3 >= 3.11 with nvidia-ml-py importable (the repo's .venv, or PYNVML_DIR=a folder
# holding pynvml.py) and nvidia-smi. Nothing else of inferwatch's dependencies is imported.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_TO_RUN="${1:-30}"
PY="${PY:-}"
if [[ -z "$PY" ]]; then
  if [[ -x .venv/bin/python ]]; then PY=.venv/bin/python; else PY=python3; fi
fi
export PYTHONPATH="daemon${PYNVML_DIR:+:$PYNVML_DIR}${PYTHONPATH:+:$PYTHONPATH}"
command -v nvidia-smi >/dev/null || { echo "FAIL: nvidia-smi not found"; exit 1; }
"$PY" -c 'import sys, pynvml; assert sys.version_info >= (3, 11)' \
  || { echo "FAIL: $PY is not python >= 3.11 with nvidia-ml-py (set PY or PYNVML_DIR)"; exit 1; }
nvidia-smi -L

compare=0
"$PY" - "$SECONDS_TO_RUN" <<'EOF' || compare=$?
import subprocess, sys, time
from inferwatch.sources.nvml_sampler import NvmlSampler

FIELDS = [  # nvidia-smi query, inferwatch series (+ labels), scale to nvidia-smi's unit, tolerance
    ("pci.bus_id", "pci_bus_id", None, None),
    ("uuid", "uuid", None, None),
    ("clocks.sm", ("inferwatch_gpu_clock_hertz", "clock", "sm"), 1e-6, 0.05),
    ("clocks.mem", ("inferwatch_gpu_clock_hertz", "clock", "memory"), 1e-6, 0.05),
    ("clocks.gr", ("inferwatch_gpu_clock_hertz", "clock", "graphics"), 1e-6, 0.05),
    ("clocks.video", ("inferwatch_gpu_clock_hertz", "clock", "video"), 1e-6, 0.05),
    ("clocks.max.sm", ("inferwatch_gpu_clock_max_hertz", "clock", "sm"), 1e-6, 0.0),
    ("clocks.max.mem", ("inferwatch_gpu_clock_max_hertz", "clock", "memory"), 1e-6, 0.0),
    ("clocks.applications.graphics", ("inferwatch_gpu_clock_application_hertz", "clock", "graphics"), 1e-6, 0.0),
    ("temperature.gpu", ("inferwatch_gpu_temperature_celsius", "sensor", "gpu"), 1, 0.1),
    ("power.draw", ("inferwatch_gpu_power_watts",), 1, 0.25),
    ("power.limit", ("inferwatch_gpu_power_limit_watts",), 1, 0.0),
    ("enforced.power.limit", ("inferwatch_gpu_power_enforced_limit_watts",), 1, 0.0),
    ("utilization.gpu", ("inferwatch_gpu_utilization_ratio",), 100, None),
    # nvidia-smi may read NVML's v2 memory info (reserved memory apart), pynvml's default is v1
    ("memory.total", ("inferwatch_gpu_memory_total_bytes",), 1 / 2**20, 0.02),
    ("memory.used", ("inferwatch_gpu_memory_used_bytes",), 1 / 2**20, None),
    ("pcie.link.gen.max", ("inferwatch_gpu_pcie_link_generation_max",), 1, 0.0),
    ("pcie.link.width.max", ("inferwatch_gpu_pcie_link_width_max",), 1, 0.0),
    ("pcie.link.gen.current", ("inferwatch_gpu_pcie_link_generation",), 1, None),
    ("pcie.link.width.current", ("inferwatch_gpu_pcie_link_width",), 1, None),
    ("pstate", ("inferwatch_gpu_performance_state",), 1, None),
    ("persistence_mode", ("inferwatch_gpu_persistence_mode",), 1, 0.0),
]
seconds = float(sys.argv[1])
sampler = NvmlSampler()
sampler.read()  # identities and NOT_SUPPORTED learnt, as the daemon's first poll
checks = fails = 0
notes: dict[str, str] = {}
cpu_ms, wall_ms, gpus = [], [], 0
end = time.monotonic() + seconds
while time.monotonic() < end:
    c0, w0 = time.process_time(), time.perf_counter()
    poll = sampler.read()
    cpu_ms.append((time.process_time() - c0) * 1e3)
    wall_ms.append((time.perf_counter() - w0) * 1e3)
    gpus = len(poll.readings)
    smi = subprocess.run(
        ["nvidia-smi", "--query-gpu=" + ",".join(f[0] for f in FIELDS),
         "--format=csv,noheader,nounits"], capture_output=True, text=True, check=True,
    ).stdout.strip().splitlines()
    for reading, row in zip(poll.readings, smi):
        cells = [c.strip() for c in row.split(",")]
        flat: dict[tuple, float] = {}
        for m, labels, v in reading.values:
            flat[(m, *sum(labels, ()))] = v
        for (query, series, scale, tol), cell in zip(FIELDS, cells):
            key = f"gpu{reading.identity.index} {query}"
            if series == "pci_bus_id":
                ok = cell.lower().endswith(reading.identity.pci_bus_id[4:])
                got = reading.identity.pci_bus_id
            elif series == "uuid":
                ok, got = cell == reading.identity.uuid, reading.identity.uuid
            else:
                value = flat.get(series)
                if cell in ("[N/A]", "N/A", "[Not Supported]"):
                    ok, got = value is None, value  # absent, never 0
                elif value is None:
                    ok, got = False, None
                else:
                    if query == "pstate":
                        want = float(cell.lstrip("P"))
                    elif query == "persistence_mode":
                        want = 1.0 if cell == "Enabled" else 0.0
                    else:
                        want = float(cell)
                    got = value * scale
                    if tol is None:  # moves too fast for two readers: the range only
                        ok = got >= 0
                    else:
                        ok = abs(got - want) <= max(tol * abs(want), 1.0 if tol else 0.5)
            checks += 1
            if not ok:
                fails += 1
                notes[key] = f"nvidia-smi {cell!r}, inferwatch {got!r}"
    time.sleep(max(0.0, 1.0 - (time.perf_counter() - w0)))
cpu_ms.sort(); wall_ms.sort()
med = lambda xs: xs[len(xs) // 2]
print(f"\n{gpus} GPU(s), {len(cpu_ms)} polls in {seconds:.0f} s")
print("| cost per poll cycle | median | max |\n|---|---|---|")
print(f"| CPU ms (all GPUs) | {med(cpu_ms):.2f} | {cpu_ms[-1]:.2f} |")
print(f"| wall ms (all GPUs) | {med(wall_ms):.2f} | {wall_ms[-1]:.2f} |")
print(f"| CPU ms per GPU | {med(cpu_ms) / max(gpus, 1):.3f} | {cpu_ms[-1] / max(gpus, 1):.3f} |")
unsupported = sorted({f for fields in sampler.fields.values() for f in fields})
print("NOT_SUPPORTED here:", ", ".join(unsupported) or "none")
for key, note in sorted(notes.items()):
    print(f"  mismatch {key}: {note}")
print(f"compare: {checks - fails}/{checks} field checks agree")
sys.exit(1 if fails else 0)
EOF

model=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr 'A-Z ' 'a-z-' | tr -cd 'a-z0-9-')
out="tests/fixtures/nvml/real-${model:-gpu}.json"
snap=0
"$PY" -m inferwatch nvml-snapshot --output "$out" || snap=$?
replay=1
[[ $snap == 0 ]] && replay=0 && "$PY" - "$out" <<'EOF' || replay=$?
import json, sys
from pathlib import Path
from inferwatch.sources.nvml_fake import FakeNvml
from inferwatch.sources.nvml_snapshot import snapshot
path = Path(sys.argv[1])
same = snapshot(lambda: FakeNvml(path)) == json.loads(path.read_text())
print(f"snapshot {path}: replays through the fake backend {'identically' if same else 'DIFFERENTLY'}")
sys.exit(0 if same else 1)
EOF

echo
echo "== gpu_check summary =="
echo "compare with nvidia-smi: $([[ $compare == 0 ]] && echo PASS || echo FAIL)"
echo "nvml-snapshot written:   $([[ $snap == 0 ]] && echo "PASS ($out)" || echo FAIL)"
echo "snapshot replays:        $([[ $replay == 0 ]] && echo PASS || echo FAIL)"
[[ $compare == 0 && $snap == 0 && $replay == 0 ]]
