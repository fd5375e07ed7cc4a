"""``inferwatch demo``: the real daemon on a simulated host.

A temporary directory receives a vLLM engine log written (and rotated) by a real logging
handler and GPU readings for two cards, and a real loopback HTTP server stands in for the
engine's API (killed and started again: its watched service goes down and comes back); the
daemon follows them with its real sources, the same way it follows a production host. At
the end the demo says what travelled through.
"""

from __future__ import annotations

import asyncio
import os
import random
import socket
import tempfile
import time
from pathlib import Path

from inferwatch.app import Daemon
from inferwatch.configfile import parse_config
from inferwatch.demo_host import (
    GPU_OFFSETS_MHZ,
    OFFSET_LOST_AFTER_S,
    SCENARIO,
    SM_LOCK_MHZ,
    XID_INCIDENT_AFTER_S,
    DemoOpenAI,
    DemoService,
    GpuScene,
    crash_lines,
    download_config,
    engine_logger,
    gpu_profile,
    kernel_incident_lines,
    spawn_download,
    spawn_zombie,
    stats_lines,
    write_json_atomic,
)
from inferwatch.logsetup import get_logger

log = get_logger(__name__)
WINDOW_S = 1.0  # one simulated 10-s stats window per second of demo time


def demo_config(
    workdir: Path,
    listen: str,
    service: DemoService | None = None,
    api: DemoOpenAI | None = None,
) -> str:
    devices = "".join(
        f"    - {{index: {i}, clock_offset_mhz: {{graphics: {mhz}}}, "
        f"sm_clock_lock_mhz: {SM_LOCK_MHZ}, pcie_generation: 2, pcie_width: 16, "
        "power_limit_watts: 250}\n"
        for i, mhz in enumerate(GPU_OFFSETS_MHZ)
    )
    return (
        f"listen: {listen}\n"
        f"kernel:\n  source: file\n  path: {workdir / 'kern.log'}\n"
        f"gpus:\n  backend: fake\n  profile: {workdir / 'gpus.json'}\n  interval: 1s\n"
        f"  expected: 2\n  devices:\n{devices}"
        f"host:\n  resident_files: [{workdir / 'engine.log'}]\n"
        "engines:\n"
        "  - name: demo\n    kind: vllm\n"
        f"    log: {workdir / 'engine.log'}\n"
        + (api.canary_config() if api is not None else "")
        + (service.config() if service is not None else "")
    )


async def simulate(
    workdir: Path, stop: asyncio.Event, seed: int = 7, zombie_pid: int | None = None
) -> int:
    """Write the scenario, looping, until ``stop``; returns the number of log lines written.

    The GPUs list the demo itself as the engine's process (running) and ``zombie_pid``, a child
    that exited and is not reaped; ``OFFSET_LOST_AFTER_S`` after the start GPU1's VF offset is
    gone (``GpuClockOffsetLost`` fires two minutes later); ``XID_INCIDENT_AFTER_S`` after the
    start both GPUs log the same Xid 31 in the kernel log (``GpuMmuFaultOnAllRanks``)."""
    rng = random.Random(seed)  # noqa: S311 - simulation, not security
    logger = engine_logger(workdir / "engine.log")
    written = 0
    started = time.monotonic()
    crashed = False
    incident_written = False
    try:
        while not stop.is_set():
            for phase in SCENARIO:
                for _ in range(phase.windows):
                    now = time.time()
                    if phase.running > 1 and not crashed:  # once, when the load is highest
                        crashed = True
                        for line in crash_lines(now):
                            logger.info(line)
                            written += 1
                    scene = GpuScene(
                        now,
                        phase.running > 0,
                        offset_lost=time.monotonic() - started >= OFFSET_LOST_AFTER_S,
                        engine_pid=os.getpid(),
                        zombie_pid=zombie_pid,
                    )
                    write_json_atomic(workdir / "gpus.json", gpu_profile(scene))
                    if not incident_written and time.monotonic() - started >= XID_INCIDENT_AFTER_S:
                        with (workdir / "kern.log").open("a", encoding="utf-8") as kern:
                            kern.writelines(kernel_incident_lines(now))
                        incident_written = True
                    if phase.running or rng.random() < 0.5:
                        for line in stats_lines(phase, now, rng):
                            logger.info(line)
                            written += 1
                    try:
                        await asyncio.wait_for(stop.wait(), WINDOW_S)
                        return written
                    except TimeoutError:
                        pass
    finally:
        for handler in logger.handlers:
            handler.close()
    return written


async def run_demo(listen: str = "127.0.0.1:9945", duration: float | None = None) -> int:
    with tempfile.TemporaryDirectory(prefix="inferwatch-demo-") as tmp:
        workdir = Path(tmp)
        # A worker that died and was never reaped, still listed by the GPU: a real zombie.
        zombie = spawn_zombie()
        scene = GpuScene(time.time(), False, engine_pid=os.getpid(), zombie_pid=zombie.pid)
        write_json_atomic(workdir / "gpus.json", gpu_profile(scene))
        (workdir / "engine.log").touch()  # the engine "exists" before the daemon looks
        # A model download by a real child process: it finishes (DownloadFinished) in ~12 s.
        downloader = spawn_download(workdir / "download")
        service = DemoService(workdir, _free_port())
        openai = DemoOpenAI()  # the engine's OpenAI API, for the canary
        await openai.start()
        (workdir / "kern.log").touch()
        text = demo_config(workdir, listen, service, openai) + download_config(
            workdir / "download", downloader.pid
        )
        config = parse_config(text, "<demo>")
        daemon = Daemon(config, workdir / "state")
        stop = asyncio.Event()
        writer = asyncio.create_task(simulate(workdir, stop, zombie_pid=zombie.pid))
        api = asyncio.create_task(service.cycle(stop))
        runner = asyncio.create_task(daemon.run())
        log.info("demo running", workdir=str(workdir), listen=listen, duration=duration)
        if duration is not None:
            done, _ = await asyncio.wait({runner}, timeout=duration)
            if not done:
                stop.set()
                written = await writer
                await _caught_up(daemon, written, timeout=5.0)
                daemon.request_stop()
        code = await runner
        stop.set()
        written = await writer
        await api
        await openai.stop()
        zombie.wait()  # reaped at last
        downloader.kill()  # done long ago unless the demo was stopped early
        downloader.wait()
        lines_read = _lines_read(daemon)
        log.info("demo finished", engine_lines_written=written, engine_lines_read=lines_read)
        if code == 0 and duration is not None and duration >= 5 and lines_read == 0:
            log.error("no engine log line travelled through the file tailer")
            return 1
        return code


def _free_port() -> int:
    """A loopback port nobody listens on now (for the demo's service)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _lines_read(daemon: Daemon) -> int:
    series = daemon.store.get("inferwatch_records_total", (("source", "engine:demo"),))
    last = series.last_real() if series is not None else None
    return int(last[1]) if last is not None else 0


async def _caught_up(daemon: Daemon, written: int, timeout: float) -> None:
    """Give the tailer a moment to read the last lines written before the demo stops."""
    deadline = time.monotonic() + timeout
    while _lines_read(daemon) < written and time.monotonic() < deadline:  # noqa: ASYNC110 - polls a counter
        await asyncio.sleep(0.1)
