"""The demo's GPUs: host A's two CMP 170HX as a fake-NVML profile, and its scripted scene
(GPU1 loses its VF offset ``OFFSET_LOST_AFTER_S`` after the start; GpuClockOffsetLost fires
two minutes later)."""

from __future__ import annotations

import asyncio
import json
import math
import os
from pathlib import Path

import psutil

from conftest import REPO, wait_until
from inferwatch.clock import FakeClock
from inferwatch.configfile import parse_config
from inferwatch.demo import demo_config
from inferwatch.demo_host import OFFSET_LOST_AFTER_S, GpuScene, gpu_profile, spawn_zombie
from inferwatch.event import Event
from inferwatch.pipeline.gpus import GpuPolling
from inferwatch.rules.evaluator import RuleManager
from inferwatch.rules.loader import load_rule_file
from inferwatch.rules.ruleset import RuleSet
from inferwatch.sources.gpus import GpuSource
from inferwatch.sources.nvml_fake import FakeNvml
from inferwatch.sources.nvml_sampler import NvmlSampler
from inferwatch.store.tsdb import SeriesStore


def offsets(tmp_path: Path, scene: GpuScene) -> dict[str, float]:
    path = tmp_path / "gpus.json"
    path.write_text(json.dumps(gpu_profile(scene)))
    fake = FakeNvml(path)
    poll = NvmlSampler(lambda: fake).read()
    return {
        str(r.identity.index): v
        for r in poll.readings
        for m, labels, v in r.values
        if m == "inferwatch_gpu_clock_offset_hertz" and dict(labels)["domain"] == "graphics"
    }


def test_offsets_then_gpu1_loses_its_offset(tmp_path: Path) -> None:
    assert OFFSET_LOST_AFTER_S < 60  # the loss shows early in a demo run
    assert offsets(tmp_path, GpuScene(0.0, True)) == {"0": 200e6, "1": 250e6}
    assert offsets(tmp_path, GpuScene(0.0, True, offset_lost=True)) == {"0": 200e6, "1": 0.0}


def test_the_demo_expects_host_a(tmp_path: Path) -> None:
    cfg = parse_config(demo_config(tmp_path, "127.0.0.1:1"), "<demo>").gpus
    assert cfg.backend == "fake" and cfg.expected == 2
    (g0, g1) = cfg.devices
    assert g0.clock_offset_mhz is not None and g0.clock_offset_mhz.graphics == 200
    assert g1.clock_offset_mhz is not None and g1.clock_offset_mhz.graphics == 250
    assert (g1.sm_clock_lock_mhz, g1.pcie_generation, g1.pcie_width) == (1400, 2, 16)


def test_the_demo_lists_its_own_running_and_zombie_processes() -> None:
    zombie = spawn_zombie()
    try:
        child = psutil.Process(zombie.pid)
        wait_until(lambda: child.status() == psutil.STATUS_ZOMBIE, 30, "the child to exit")
        doc = gpu_profile(GpuScene(0.0, True, engine_pid=os.getpid(), zombie_pid=zombie.pid))
        pids = [p["pid"] for g in doc["gpus"] for p in g["nvmlDeviceGetComputeRunningProcesses"]]
        assert pids == [os.getpid(), zombie.pid]
    finally:
        zombie.wait()


def test_the_demo_scene_fires_gpu_clock_offset_lost_on_a_fake_clock(tmp_path: Path) -> None:
    """The demo's GPUs through the daemon's GPU source, expectations and shipped GPU rules, on a
    fake clock: healthy for a minute, GPU1's offset lost, GpuClockOffsetLost for GPU1 once it
    has been lost for 2 min (not before), and never for GPU0."""
    clock = FakeClock(1_800_000_000.0)
    store = SeriesStore(clock, retention_s=math.inf)
    cfg = parse_config(demo_config(tmp_path, "127.0.0.1:1"), "<demo>").gpus
    path = tmp_path / "scene.json"
    path.write_text(json.dumps(gpu_profile(GpuScene(clock.time(), True))))
    fake = FakeNvml(path)
    source = GpuSource(NvmlSampler(lambda: fake), clock, interval=2.0)

    async def sink(_events: list[Event]) -> None:
        return None

    polling = GpuPolling(source, cfg, store, sink, clock)
    groups, problems = load_rule_file(REPO / "rules" / "gpu.yaml")
    assert problems == []
    rules = RuleManager(RuleSet(tuple(groups)), store, {})
    firing: dict[float, list[str]] = {}

    async def scene() -> None:
        start = clock.time()
        while clock.time() - start < 300:
            lost = clock.time() - start >= 60
            path.write_text(json.dumps(gpu_profile(GpuScene(clock.time(), True, offset_lost=lost))))
            fake.reload()
            batch = await polling.poll()
            for s in batch.samples:
                store.set(s.name, s.labels, s.value, batch.at)
            await polling.tick()
            rules.evaluate_all(clock.time())
            firing[clock.time() - start] = [
                dict(a.labels)["gpu"]
                for a in rules.alerts()
                if dict(a.labels)["alertname"] == "GpuClockOffsetLost" and a.state == "firing"
            ]
            clock.advance(2.0)

    asyncio.run(scene())
    assert all(not gpus for t, gpus in firing.items() if t < 60 + 120)
    assert all(gpus == ["1"] for t, gpus in firing.items() if t >= 60 + 120 + 2)
