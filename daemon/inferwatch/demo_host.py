"""A simulated inference host for ``inferwatch demo``: a vLLM engine writing its log (rotated by
a real ``RotatingFileHandler``) and two GPUs' NVML answers (a fake-NVML profile), with numbers
modelled on host A of reference/host.md (step rate ~36/s, MAL 2.5-3.1 on prose, 4-5 on
patterned content).

Only writers live here; the daemon reads what they write through its real sources.
"""

from __future__ import annotations

import asyncio
import json
import logging
import logging.handlers
import math
import os
import random
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from aiohttp import web

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


# Host A's two CMP 170HX (reference/host.md): SM locked at 1400 MHz (reads 1395), VF offsets
# +200 / +250 MHz applied at boot, PCIe 5 GT/s (gen 2) x16 behind a PLX switch, passive cooling
# (no fans). The demo's scripted fault: GPU1 loses its offset this long after the start.
OFFSET_LOST_AFTER_S = 30.0
GPU_BUSES = ("00000000:03:00.0", "00000000:04:00.0")
GPU_OFFSETS_MHZ = (200, 250)
SM_LOCK_MHZ = 1400
MIB = 2**20
NOT_SUPPORTED = {"error": "NOT_SUPPORTED"}


@dataclass(frozen=True, slots=True)
class GpuScene:
    """What the simulated GPUs show at one moment."""

    now: float
    busy: bool
    offset_lost: bool = False  # GPU1's VF offset gone (a driver reload without the tuning unit)
    engine_pid: int | None = None  # a running process holding VRAM on GPU0
    zombie_pid: int | None = None  # a defunct child still listed on GPU1


def _cmp170hx(i: int, scene: GpuScene) -> dict[str, object]:
    wobble = math.sin(scene.now / 7 + i)
    busy = scene.busy
    offset = 0 if (i == 1 and scene.offset_lost) else GPU_OFFSETS_MHZ[i]
    used = (7782 if busy else 7620) * MIB
    procs: list[dict[str, object]] = []
    if i == 0 and scene.engine_pid is not None:
        procs.append({"pid": scene.engine_pid, "usedGpuMemory": 7300 * MIB})
    if i == 1 and scene.zombie_pid is not None:
        procs.append({"pid": scene.zombie_pid, "usedGpuMemory": 300 * MIB})
    return {
        "nvmlDeviceGetUUID": f"GPU-5f0e6c2a-11d3-4b6c-9a2e-00000000000{i}",
        "nvmlDeviceGetPciInfo": {"busId": GPU_BUSES[i]},
        "nvmlDeviceGetName": "NVIDIA CMP 170HX",
        "nvmlDeviceGetSerial": f"132402101{i:04d}",
        "nvmlDeviceGetVbiosVersion": "92.00.4F.00.01",
        "nvmlDeviceGetMigMode": NOT_SUPPORTED,
        "nvmlDeviceGetClockInfo": {"graphics": 1395, "sm": 1395, "memory": 1458, "video": 1275},
        "nvmlDeviceGetMaxClockInfo": {"graphics": 1410, "sm": 1410, "memory": 1458, "video": 1290},
        "nvmlDeviceGetApplicationsClock": {
            "graphics": 1410, "sm": 1410, "memory": 1458, "video": 1290,
        },
        "nvmlDeviceGetClockOffsets": {
            "graphics": {"clockOffsetMHz": offset, "minClockOffsetMHz": -1000,
                         "maxClockOffsetMHz": 1000},
            "memory": {"clockOffsetMHz": 0, "minClockOffsetMHz": -1000,
                       "maxClockOffsetMHz": 1000},
        },
        "nvmlDeviceGetPerformanceState": 0,
        "nvmlDeviceGetCurrentClocksEventReasons": 0 if busy else 0x1,
        "nvmlDeviceGetTemperature": {"gpu": round((66 if busy else 41) + 2 * wobble + i)},
        "nvmlDeviceGetFieldValues": {"82": round((71 if busy else 45) + 2 * wobble + i), "230": 0},
        "nvmlDeviceGetPowerUsage": round(((235 if busy else 48) + 10 * wobble) * 1000),
        "nvmlDeviceGetPowerManagementLimit": 250000,
        "nvmlDeviceGetEnforcedPowerLimit": 250000,
        "nvmlDeviceGetTotalEnergyConsumption": round(scene.now * 1000 * 120) % 10**12,
        "nvmlDeviceGetNumFans": NOT_SUPPORTED,
        "nvmlDeviceGetUtilizationRates": {"gpu": 97 if busy else 0, "memory": 41 if busy else 0},
        "nvmlDeviceGetMemoryInfo": {"total": 8192 * MIB, "free": 8192 * MIB - used, "used": used},
        "nvmlDeviceGetCurrPcieLinkGeneration": 2,
        "nvmlDeviceGetMaxPcieLinkGeneration": 2,
        "nvmlDeviceGetCurrPcieLinkWidth": 16,
        "nvmlDeviceGetMaxPcieLinkWidth": 16,
        "nvmlDeviceGetPcieThroughput": {"rx": 181000 if busy else 40, "tx": 92000 if busy else 20},
        "nvmlDeviceGetPcieReplayCounter": 0,
        "nvmlDeviceGetTotalEccErrors": {
            "corrected/volatile": 0, "corrected/aggregate": 0,
            "uncorrected/volatile": 0, "uncorrected/aggregate": 0,
        },
        "nvmlDeviceGetRetiredPages": {"single_bit": NOT_SUPPORTED, "double_bit": NOT_SUPPORTED},
        "nvmlDeviceGetRetiredPagesPendingStatus": NOT_SUPPORTED,
        "nvmlDeviceGetRemappedRows": [0, 0, 0, 0],
        "nvmlDeviceGetPersistenceMode": 1,
        "nvmlDeviceGetComputeRunningProcesses": procs,
        "nvmlDeviceGetGraphicsRunningProcesses": [],
    }  # fmt: skip


def spawn_zombie() -> subprocess.Popen[bytes]:
    """A child that exits at once and is not reaped until the caller waits on it: a real
    zombie, like a defunct engine worker the GPU still lists."""
    return subprocess.Popen([sys.executable, "-c", "pass"])


def gpu_profile(scene: GpuScene) -> dict[str, object]:
    """The fake-NVML profile of host A's two cards (the format ``nvml-snapshot`` writes)."""
    return {
        "format": "inferwatch-nvml-profile/1",
        "system": {
            "nvmlSystemGetDriverVersion": "575.57.08",
            "nvmlSystemGetCudaDriverVersion": 12090,
        },
        "gpus": [_cmp170hx(i, scene) for i in range(2)],
        "events": [],
    }


def write_json_atomic(path: Path, doc: object) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(doc), encoding="utf-8")
    tmp.replace(path)


# A model download: a real child process writes shards into ``*.incomplete`` files, renames
# them when complete and exits, as `hf download` does; the daemon watches it by its PID.
DOWNLOAD_CHUNK_BYTES = 512 * 1024
DOWNLOAD_CHUNKS = 8  # one a second
DOWNLOAD_BYTES = DOWNLOAD_CHUNK_BYTES * DOWNLOAD_CHUNKS
_DOWNLOADER = """
import os, sys, time
directory, chunk, chunks = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
final = os.path.join(directory, "model-00001-of-00001.safetensors")
with open(final + ".incomplete", "wb") as f:
    for _ in range(chunks):
        f.write(os.urandom(chunk))
        f.flush()
        time.sleep(1.0)
os.rename(final + ".incomplete", final)
"""


def spawn_download(directory: Path) -> subprocess.Popen[bytes]:
    """Start the demo's downloader writing into ``directory`` (created); the caller reaps it."""
    directory.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-c", _DOWNLOADER, str(directory)]
    return subprocess.Popen([*cmd, str(DOWNLOAD_CHUNK_BYTES), str(DOWNLOAD_CHUNKS)])


def download_config(directory: Path, pid: int) -> str:
    """The ``downloads:`` section watching :func:`spawn_download`'s child."""
    return (
        f"downloads:\n  - name: demo-model\n    directory: {directory}\n    pid: {pid}\n"
        f"    expected_bytes: {DOWNLOAD_BYTES}\n    interval: 1s\n"
    )


SERVICE_UP_S = 8.0  # the demo service answers this long, is killed, and is back after
SERVICE_DOWN_S = 6.0


class DemoService:
    """A real loopback HTTP server (a child ``python -m http.server``) standing in for an
    engine's API: its ``/health`` is a file in its directory. ``cycle`` kills it after
    ``SERVICE_UP_S`` and starts it again ``SERVICE_DOWN_S`` later, so the demo's watched service
    goes down and comes back (EngineDown fires and resolves)."""

    def __init__(self, workdir: Path, port: int) -> None:
        self.www = workdir / "www"
        self.www.mkdir(exist_ok=True)
        (self.www / "health").write_text("ok\n", encoding="utf-8")
        self.port = port
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "http.server", "--bind", "127.0.0.1",
             "--directory", str(self.www), str(self.port)],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip

    def stop(self) -> None:
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait()
            self.proc = None

    def config(self) -> str:
        """Its entry in the demo's ``services:``."""
        return (
            "services:\n"
            "  - name: demo-api\n    engine: demo\n"
            f"    signature: '{self.www}'\n    port: {self.port}\n"
            f"    http_url: http://127.0.0.1:{self.port}/health\n"
            "    interval: 1s\n    startup_grace: 3s\n"
        )

    async def cycle(self, stop: asyncio.Event) -> None:
        """Up, killed, back: until ``stop``; the server is gone when it returns."""
        try:
            while not stop.is_set():
                self.start()
                if await _wait(stop, SERVICE_UP_S):
                    return
                self.stop()
                if await _wait(stop, SERVICE_DOWN_S):
                    return
        finally:
            self.stop()


async def _wait(stop: asyncio.Event, seconds: float) -> bool:
    """Wait ``seconds`` or until ``stop``; True if stopped."""
    try:
        await asyncio.wait_for(stop.wait(), seconds)
    except TimeoutError:
        return False
    return True


# The demo's kernel-log scene (kernel.source: file): both GPUs log the same Xid 31 MMU fault
# within a second, from the engine's process, as host A's did when the engine read out of
# bounds on every tensor-parallel rank: one software-oob-all-ranks incident, one critical alert.
XID_INCIDENT_AFTER_S = 8.0


def kernel_incident_lines(now: float, host: str = "demo") -> list[str]:
    """The two kern.log lines (syslog format, local time, no year) of the scripted incident."""
    stamp = time.strftime("%b %d %H:%M:%S", time.localtime(now)).replace(" 0", "  ", 1)
    return [
        f"{stamp} {host} kernel: NVRM: Xid (PCI:{bus[-12:-2].lower()}): 31, pid={ENGINE_PID}, "
        "name=python3, channel 0x00000002, intr 00000000. MMU Fault: ENGINE GRAPHICS GPC6 "
        "GPCCLIENT_T1_13 faulted @ 0x7f2a_320c2000. Fault is of type FAULT_PDE "
        "ACCESS_TYPE_VIRT_READ\n"
        for bus in GPU_BUSES
    ]


# The engine's OpenAI API, as far as the canary asks it: a model list and a streamed answer
# ("Paris", in three chunks ~30 ms apart, with its usage), so the demo exports the canary series.
DEMO_MODEL = "demo-176b"
_CANARY_CHUNKS = ("Pa", "ri", "s")


class DemoOpenAI:
    """An in-process loopback aiohttp server answering ``/v1/models`` and streamed
    ``/v1/chat/completions`` like vLLM's OpenAI server."""

    def __init__(self) -> None:
        self.runner: web.AppRunner | None = None
        self.port = 0

    async def start(self) -> None:
        app = web.Application()
        app.router.add_get("/v1/models", self._models)
        app.router.add_post("/v1/chat/completions", self._chat)
        self.runner = web.AppRunner(app, access_log=None)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    async def stop(self) -> None:
        if self.runner is not None:
            await self.runner.cleanup()

    def canary_config(self) -> str:
        """The demo engine's ``canary:`` (every 30 s, so the series show at once)."""
        return f"    canary: {{url: 'http://127.0.0.1:{self.port}', every: 30s}}\n"

    async def _models(self, _request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": DEMO_MODEL}]})

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        for piece in _CANARY_CHUNKS:
            chunk = {"object": "chat.completion.chunk", "model": DEMO_MODEL,
                     "choices": [{"index": 0, "delta": {"content": piece}}]}  # fmt: skip
            await response.write(f"data: {json.dumps(chunk)}\n\n".encode())
            await asyncio.sleep(0.03)
        usage = {"object": "chat.completion.chunk", "model": DEMO_MODEL, "choices": [],
                 "usage": {"completion_tokens": len(_CANARY_CHUNKS)}}  # fmt: skip
        await response.write(f"data: {json.dumps(usage)}\n\ndata: [DONE]\n\n".encode())
        await response.write_eof()
        return response
