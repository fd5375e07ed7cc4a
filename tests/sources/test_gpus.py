"""The GPU source on the fake NVML profiles of tests/fixtures/nvml (see SOURCES.md there):
units, labels, NOT_SUPPORTED left absent and never asked again, a lost GPU, a hung call, and an
Xid that NVML and the kernel log both report counted once."""

from __future__ import annotations

import asyncio
import json
import shutil
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pynvml
import pytest

from conftest import wait_until
from inferwatch.clock import FakeClock
from inferwatch.derive.kernel import metrics as m
from inferwatch.errors import NoData
from inferwatch.event import Event, Kind
from inferwatch.model import LineRecord, NvmlXidRecord, Record, Sample, SampleBatch
from inferwatch.pipeline.kernel import KernelIngest
from inferwatch.runtime.blocking import BlockingPool
from inferwatch.sources.gpu_processes import GpuProcessUse, ProcessTable
from inferwatch.sources.gpus import GpuSource, sampler_for
from inferwatch.sources.nvml_events import NvmlXidEvents
from inferwatch.sources.nvml_fake import FakeNvml
from inferwatch.sources.nvml_sampler import NvmlSampler
from inferwatch.store.tsdb import SeriesStore
from sources.run_source import collect

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "nvml"
GPU1 = {
    "gpu": "1",
    "uuid": "GPU-5f0e6c2a-11d3-4b6c-9a2e-000000000001",
    "pci_bus_id": "0000:04:00.0",
}


def profile(tmp_path: Path, name: str) -> Path:
    path = tmp_path / "gpus.json"
    shutil.copy(FIXTURES / name, path)
    return path


def rewrite(path: Path, change: Any) -> None:
    """Change the profile atomically, as the demo and a test scene do."""
    doc = json.loads(path.read_text())
    change(doc)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(doc))
    tmp.replace(path)


def poll(source: GpuSource) -> SampleBatch:
    return asyncio.run(source.poll())


def values(batch: SampleBatch, name: str) -> dict[tuple[tuple[str, str], ...], float]:
    return {s.labels: s.value for s in batch.samples if s.name == name}


def value(batch: SampleBatch, name: str, **labels: str) -> float:
    found = [
        s.value
        for s in batch.samples
        if s.name == name and labels.items() <= dict(s.labels).items()
    ]
    assert len(found) == 1, (name, labels, found)
    return found[0]


def source(path: Path, **kwargs: Any) -> GpuSource:
    return GpuSource(sampler_for("fake", path), FakeClock(1000.0), **kwargs)


def test_host_a_units_and_labels(tmp_path: Path) -> None:
    batch = poll(source(profile(tmp_path, "host-a-cmp170hx.json")))
    assert value(batch, "inferwatch_gpu_clock_hertz", gpu="0", clock="sm") == 1395e6
    assert value(batch, "inferwatch_gpu_clock_hertz", gpu="1", clock="memory") == 1458e6
    assert value(batch, "inferwatch_gpu_clock_max_hertz", gpu="0", clock="sm") == 1410e6
    assert value(batch, "inferwatch_gpu_clock_offset_hertz", gpu="0", domain="graphics") == 200e6
    assert value(batch, "inferwatch_gpu_clock_offset_hertz", gpu="1", domain="graphics") == 250e6
    assert value(batch, "inferwatch_gpu_pcie_link_generation", gpu="1") == 2
    assert value(batch, "inferwatch_gpu_pcie_link_width", **GPU1) == 1  # the degraded slot
    assert value(batch, "inferwatch_gpu_pcie_link_width_max", **GPU1) == 16
    assert value(batch, "inferwatch_gpu_power_limit_watts", gpu="0") == 250.0
    assert value(batch, "inferwatch_gpu_utilization_ratio", gpu="0") == 0.97
    assert value(batch, "inferwatch_gpu_memory_total_bytes", gpu="0") == 8 * 2**30
    assert value(batch, "inferwatch_gpu_energy_joules_total", gpu="0") == 918_442.117
    assert value(batch, "inferwatch_gpu_pcie_throughput_bytes_per_second", gpu="0",
                 direction="rx") == 181000 * 1024  # fmt: skip
    assert value(batch, "inferwatch_gpu_throttle_reason", gpu="0", reason="hw_slowdown") == 0
    assert value(batch, "inferwatch_gpu_recovery_action", gpu="1") == 0
    assert value(batch, "inferwatch_gpu_temperature_celsius", gpu="0", sensor="memory") > 0
    info = dict(next(s.labels for s in batch.samples if s.name == "inferwatch_gpu_info"))
    assert info["name"] == "NVIDIA CMP 170HX"
    assert (info["driver"], info["cuda"]) == ("575.57.08", "12.9")
    kinds = {s.name: s.kind for s in batch.samples}
    assert kinds["inferwatch_gpu_energy_joules_total"] is Kind.COUNTER
    assert kinds["inferwatch_gpu_pcie_replay_errors_total"] is Kind.COUNTER
    per_gpu = [
        s
        for s in batch.samples
        if s.name.startswith("inferwatch_gpu_") and "total" not in s.name[-6:]
    ]
    for s in per_gpu:
        if s.name not in ("inferwatch_gpu_nvml_call_timeouts_total",
                          "inferwatch_gpu_polls_skipped_total"):  # fmt: skip
            assert {"gpu", "uuid", "pci_bus_id"} <= dict(s.labels).keys(), s


class CountingFake(FakeNvml):
    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.asked: list[str] = []

    def _answer(self, name: str, handle: Any, args: tuple[Any, ...]) -> Any:
        self.asked.append(name)
        return super()._answer(name, handle, args)


def test_not_supported_is_absent_and_never_asked_again(tmp_path: Path) -> None:
    fake = CountingFake(profile(tmp_path, "host-a-cmp170hx.json"))
    src = GpuSource(NvmlSampler(lambda: fake), FakeClock(0.0))
    first = poll(src)
    assert not values(first, "inferwatch_gpu_fan_speed_ratio")  # passive cards: no fans
    assert not values(first, "inferwatch_gpu_retired_pages")  # GA100 remaps rows instead
    assert value(first, "inferwatch_gpu_field_unsupported", gpu="0", field="fan") == 1
    assert fake.asked.count("nvmlDeviceGetNumFans") == 2  # once per GPU
    fake.asked.clear()
    second = poll(src)
    assert "nvmlDeviceGetNumFans" not in fake.asked
    assert "nvmlDeviceGetRetiredPagesPendingStatus" not in fake.asked
    assert not values(second, "inferwatch_gpu_fan_speed_ratio")
    assert (
        value(second, "inferwatch_gpu_field_unsupported", gpu="1", field="retired_pages.single_bit")
        == 1
    )
    # identity fields (read once, with the identity) stay reported: mig_mode
    assert values(first, "inferwatch_gpu_field_unsupported") == values(
        second, "inferwatch_gpu_field_unsupported"
    )
    assert value(second, "inferwatch_gpu_field_unsupported", gpu="0", field="mig_mode") == 1


def test_offsets_fall_back_to_the_per_domain_calls(tmp_path: Path) -> None:
    path = profile(tmp_path, "host-a-cmp170hx.json")

    def older_driver(doc: dict[str, Any]) -> None:
        for gpu in doc["gpus"]:
            gpu["nvmlDeviceGetClockOffsets"] = {"error": "FUNCTION_NOT_FOUND"}
            gpu["nvmlDeviceGetGpcClkVfOffset"] = -50
            gpu["nvmlDeviceGetMemClkVfOffset"] = 500

    rewrite(path, older_driver)
    batch = poll(source(path))
    assert value(batch, "inferwatch_gpu_clock_offset_hertz", gpu="0", domain="graphics") == -50e6
    assert value(batch, "inferwatch_gpu_clock_offset_hertz", gpu="1", domain="memory") == 500e6
    assert not [
        s for s in batch.samples if dict(s.labels).get("field", "").startswith("clock_offset")
    ]


def test_a_lost_gpu_reads_down_once_and_comes_back(tmp_path: Path) -> None:
    path = profile(tmp_path, "host-a-cmp170hx.json")
    src = source(path)
    assert value(poll(src), "inferwatch_gpu_up", **GPU1) == 1
    assert src.take_lost() == []
    rewrite(path, lambda doc: doc["gpus"][1].update(lost=True))
    batch = poll(src)
    assert value(batch, "inferwatch_gpu_up", **GPU1) == 0
    assert value(batch, "inferwatch_gpu_up", gpu="0") == 1
    assert not [
        s
        for s in batch.samples
        if s.name == "inferwatch_gpu_clock_hertz" and ("gpu", "1") in s.labels
    ]
    stale = {name for name, labels in batch.stale if ("gpu", "1") in labels}
    assert "inferwatch_gpu_clock_hertz" in stale
    (lost,) = src.take_lost()
    assert (lost.index, lost.pci_bus_id) == (1, "0000:04:00.0")
    poll(src)
    assert src.take_lost() == []  # still lost: reported once
    rewrite(path, lambda doc: doc["gpus"][1].pop("lost"))
    assert value(poll(src), "inferwatch_gpu_up", **GPU1) == 1


def test_a_hung_call_is_timed_out_then_polls_are_skipped_and_the_pool_runs_on(
    tmp_path: Path,
) -> None:
    path = profile(tmp_path, "host-a-cmp170hx.json")
    src = source(path, call_timeout=0.2)
    poll(src)
    rewrite(path, lambda doc: doc.update(hang={"call": "nvmlDeviceGetPowerUsage", "gpu": 1}))

    async def scene() -> tuple[SampleBatch, SampleBatch, str]:
        timed_out = await src.poll()
        skipped = await src.poll()
        pool = BlockingPool(workers=1)
        try:  # the shared pool (SQLite, snapshots) is not the NVML thread: it still answers
            answer = await pool.run(2.0, lambda: "snapshot written")
        finally:
            pool.shutdown()
        return timed_out, skipped, answer

    timed_out, skipped, answer = asyncio.run(scene())
    assert answer == "snapshot written"
    assert value(timed_out, "inferwatch_gpu_nvml_call_timeouts_total") == 1
    assert value(skipped, "inferwatch_gpu_polls_skipped_total") == 1
    assert not values(skipped, "inferwatch_gpu_clock_hertz")
    assert src.worker.busy
    rewrite(path, lambda doc: doc.pop("hang"))  # the driver comes back
    wait_until(lambda: not src.worker.busy, 10, "the stuck call to return")
    after = poll(src)
    assert value(after, "inferwatch_gpu_clock_hertz", gpu="1", clock="sm") == 1395e6
    assert value(after, "inferwatch_gpu_nvml_call_timeouts_total") == 1


def test_a_hang_with_seconds_ends_by_itself(tmp_path: Path) -> None:
    path = profile(tmp_path, "host-a-cmp170hx.json")
    rewrite(path, lambda doc: doc.update(hang={"call": "nvmlDeviceGetUUID", "seconds": 0.05}))
    batch = poll(source(path, call_timeout=10.0))
    assert value(batch, "inferwatch_gpu_up", gpu="0") == 1


def test_eight_gpu_server(tmp_path: Path) -> None:
    batch = poll(source(profile(tmp_path, "8x-h100-sxm.json")))
    ups = values(batch, "inferwatch_gpu_up")
    assert sorted(dict(k)["gpu"] for k in ups) == [str(i) for i in range(8)]
    assert {dict(k)["pci_bus_id"] for k in ups} >= {"0000:18:00.0", "0000:2a:00.0", "0000:db:00.0"}
    assert set(values(batch, "inferwatch_gpu_pcie_link_generation").values()) == {5.0}
    assert set(values(batch, "inferwatch_gpu_power_limit_watts").values()) == {700.0}
    assert not values(batch, "inferwatch_gpu_clock_offset_hertz")  # datacenter boards: none
    assert not values(batch, "inferwatch_gpu_fan_speed_ratio")  # zero fans
    mig = {dict(s.labels)["mig_mode"] for s in batch.samples if s.name == "inferwatch_gpu_info"}
    assert mig == {"disabled"}


class Capture(ProcessTable):
    def __init__(self) -> None:
        super().__init__()
        self.uses: list[GpuProcessUse] = []
        self.gpus: list[tuple[str, str, str]] = []

    def samples(
        self, gpus: Sequence[tuple[str, str, str]], uses: Sequence[GpuProcessUse]
    ) -> tuple[Sample, ...]:
        self.gpus, self.uses = list(gpus), list(uses)
        return super().samples(gpus, uses)


def test_mig_gpu_reports_mode_and_processes_without_memory(tmp_path: Path) -> None:
    table = Capture()
    src = GpuSource(sampler_for("fake", profile(tmp_path, "h100-mig.json"), table), FakeClock(0.0))
    batch = poll(src)
    info = dict(next(s.labels for s in batch.samples if s.name == "inferwatch_gpu_info"))
    assert info["mig_mode"] == "enabled"
    assert not values(batch, "inferwatch_gpu_utilization_ratio")  # N/A on a MIG parent
    assert value(batch, "inferwatch_gpu_memory_used_bytes") == 20340 * 2**20
    assert [(u.pid, u.used_bytes, u.kind) for u in table.uses] == [
        (2413907, None, "compute"),
        (2413988, None, "compute"),
    ]
    assert table.gpus == [("0", "GPU-3e7a1c55-0b9d-4e62-a1f4-7c9d2e6b5a10", "0000:c1:00.0")]
    assert value(batch, "inferwatch_gpu_orphaned_memory_bytes") == 0


def test_no_profile_file_is_no_data(tmp_path: Path) -> None:
    with pytest.raises(NoData):
        poll(source(tmp_path / "missing.json"))


def test_no_driver_is_no_data() -> None:
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:  # the common case on CI: no driver
        pass
    else:
        pytest.skip("an NVIDIA driver is present here")
    with pytest.raises(NoData):
        poll(GpuSource(sampler_for("nvml", None), FakeClock(0.0)))


def test_worker_thread_is_not_the_callers() -> None:
    src = GpuSource(NvmlSampler(lambda: None), FakeClock(0.0))
    seen: list[str] = []

    async def run() -> None:
        await src.worker.run(1.0, lambda: seen.append(threading.current_thread().name))

    asyncio.run(run())
    assert seen == ["inferwatch-nvml"]


def host_a(tmp_path: Path) -> Path:
    path = tmp_path / "gpus.json"
    shutil.copy(FIXTURES / "host-a-cmp170hx.json", path)
    return path


def add_event(path: Path, gpu: int, xid: int, key: str) -> None:
    rewrite(path, lambda doc: doc.setdefault("events", []).append({"gpu": gpu, "xid": xid,
                                                                    "id": key}))  # fmt: skip


def xids(records: list[Record]) -> list[NvmlXidRecord]:
    return [r for r in records if isinstance(r, NvmlXidRecord)]


# CONSTRUCTED: the kernel line of host A's GPU1 Xid 31, in the corpus's Xid 31 format
XID31_LINE = (
    "NVRM: Xid (PCI:0000:04:00): 31, pid=4242, name=VLLM::Worker, channel 0x00000018, intr "
    "00000000. MMU Fault: ENGINE GRAPHICS GPC4 GPCCLIENT_T1_0 faulted @ 0x7f3c_1b200000. Fault "
    "is of type FAULT_PDE ACCESS_TYPE_VIRT_READ"
)


def test_an_xid_both_sources_report_counts_once(tmp_path: Path) -> None:
    """The NVML event first (held 1 s), the kernel line 0.2 s later: one count, one event, the
    line's (it carries the MMU fault), with the UUID NVML gave."""
    path = host_a(tmp_path)
    fake = FakeNvml(path)
    clock = FakeClock(1_764_583_201.0)
    store = SeriesStore(clock)
    events: list[Event] = []

    async def sink(batch: list[Event]) -> None:
        events.extend(batch)

    ingest = KernelIngest(store, sink, clock, boot_id="b", alert_max_age=600, first_start=False)
    source = NvmlXidEvents(lambda: fake, clock)

    def later() -> None:
        wait_until(lambda: source.registered, 10, "registration")
        add_event(path, 1, 31, "fault")

    async def scene() -> None:
        writer = threading.Thread(target=later)
        writer.start()
        got = await collect(source, lambda rs: len(xids(rs)) >= 1, timeout=20)
        writer.join()
        for record in xids(got):
            await ingest.on_nvml(record)
        clock.advance(0.2)
        await ingest(LineRecord("kernel", "/var/log/kern.log", 1, XID31_LINE, clock.time()))
        clock.advance(5.0)
        await ingest.tick()

    asyncio.run(scene())
    (xid,) = [e for e in events if e.type == "xid"]
    assert xid.source == "kernel" and xid.details["uuid"] == GPU1["uuid"]
    (series,) = store.family(m.XID_ERRORS)
    assert series.vs[-1] == 1.0
    assert dict(series.labels)["pci_bus_id"] == GPU1["pci_bus_id"]
