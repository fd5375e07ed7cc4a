"""The demo's GPUs: host A's two CMP 170HX as a fake-NVML profile, and its scripted scene
(GPU1 loses its VF offset ``OFFSET_LOST_AFTER_S`` after the start; GpuClockOffsetLost fires
two minutes later)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import psutil

from conftest import wait_until
from inferwatch.configfile import parse_config
from inferwatch.demo import demo_config
from inferwatch.demo_host import OFFSET_LOST_AFTER_S, GpuScene, gpu_profile, spawn_zombie
from inferwatch.sources.nvml_fake import FakeNvml
from inferwatch.sources.nvml_sampler import NvmlSampler


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
