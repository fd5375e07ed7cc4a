"""The GPU wiring: a GPU NVML reports lost becomes one ``gpu_lost`` event; ``gpus.devices`` and
``gpus.expected`` are exported every tick with the matched GPU's labels."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

from inferwatch.clock import FakeClock
from inferwatch.configfile import parse_config
from inferwatch.event import Event
from inferwatch.labels import make_labels
from inferwatch.pipeline.gpus import GpuPolling
from inferwatch.sources.gpus import GpuSource, sampler_for
from inferwatch.store.tsdb import SeriesStore

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "nvml"
GPU0 = {
    "gpu": "0",
    "uuid": "GPU-5f0e6c2a-11d3-4b6c-9a2e-000000000000",
    "pci_bus_id": "0000:03:00.0",
}
GPU1 = {
    "gpu": "1",
    "uuid": "GPU-5f0e6c2a-11d3-4b6c-9a2e-000000000001",
    "pci_bus_id": "0000:04:00.0",
}


def setup(tmp_path: Path, devices: str) -> tuple[GpuPolling, SeriesStore, list[Event], Path]:
    path = tmp_path / "gpus.json"
    shutil.copy(FIXTURES / "host-a-cmp170hx.json", path)
    cfg = parse_config(
        f"gpus:\n  backend: fake\n  profile: {path}\n  expected: 2\n  devices:\n{devices}", "c.yaml"
    ).gpus
    clock = FakeClock(1000.0)
    store = SeriesStore(clock)
    got: list[Event] = []

    async def sink(events: list[Event]) -> None:
        got.extend(events)

    source = GpuSource(sampler_for("fake", path), clock)
    return GpuPolling(source, cfg, store, sink, clock), store, got, path


def last(store: SeriesStore, name: str, **labels: str) -> float | None:
    series = store.get(name, make_labels(labels))
    value = series.last_real() if series is not None else None
    return value[1] if value is not None else None


def test_expectations_carry_the_matched_gpus_labels(tmp_path: Path) -> None:
    devices = (
        "    - {index: 0, clock_offset_mhz: {graphics: 200}, sm_clock_lock_mhz: 1400}\n"
        f"    - {{uuid: '{GPU1['uuid'].upper()}', pcie_generation: 2, pcie_width: 16,"
        " power_limit_watts: 250}\n"
        "    - {serial: 'no-such-card', pcie_width: 8}\n"
    )
    polling, store, _, _ = setup(tmp_path, devices)
    asyncio.run(polling.tick())
    assert last(store, "inferwatch_gpus_expected") == 2
    assert last(store, "inferwatch_gpu_expected_pcie_link_width", **GPU1) is None  # not polled yet
    asyncio.run(polling.poll())
    asyncio.run(polling.tick())
    offset = "inferwatch_gpu_expected_clock_offset_hertz"
    assert last(store, offset, **GPU0, domain="graphics") == 200e6
    assert last(store, "inferwatch_gpu_expected_sm_clock_hertz", **GPU0) == 1400e6
    assert last(store, "inferwatch_gpu_expected_sm_clock_tolerance_hertz", **GPU0) == 15e6
    assert last(store, "inferwatch_gpu_expected_pcie_link_generation", **GPU1) == 2
    assert last(store, "inferwatch_gpu_expected_pcie_link_width", **GPU1) == 16
    assert last(store, "inferwatch_gpu_expected_power_limit_watts", **GPU1) == 250
    widths = list(store.family("inferwatch_gpu_expected_pcie_link_width"))
    assert len(widths) == 1  # the entry for an unknown serial matches nothing


def test_a_lost_gpu_is_one_event(tmp_path: Path) -> None:
    polling, _, got, path = setup(tmp_path, "    - {index: 0}\n")
    asyncio.run(polling.poll())
    doc = json.loads(path.read_text())
    doc["gpus"][1]["lost"] = True
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(doc))
    tmp.replace(path)
    asyncio.run(polling.poll())
    asyncio.run(polling.poll())
    (event,) = got
    assert event.type == "gpu_lost"
    assert dict(event.labels) == GPU1
    assert event.details["reason"] == "NVML_ERROR_GPU_IS_LOST"
