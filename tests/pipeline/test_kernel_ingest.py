"""The daemon's kernel ingest: one cheap triage per record, one parse per relevant record."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from inferwatch.clock import FakeClock
from inferwatch.derive.kernel import metrics as m
from inferwatch.model import Event, LineRecord
from inferwatch.parsers import kernel_message
from inferwatch.pipeline.kernel import KernelIngest
from inferwatch.store.tsdb import SeriesStore

LINES = [
    "Dec  1 10:00:00 host kernel: usb 1-1: new high-speed USB device number 2 using xhci_hcd",
    "Dec  1 10:00:01 host kernel: NVRM: Xid (PCI:0000:01:00): 31, pid=1234, name=python3, "
    "Ch 00000008, intr 00000000. MMU Fault: ENGINE GRAPHICS GPC1 GPCCLIENT_T1_5 faulted @ "
    "0x7f2a_43e00000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_READ",
]


def test_each_relevant_record_is_parsed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    real = kernel_message.parse_gpu_message

    def counting(message: str) -> Any:
        calls.append(message)
        return real(message)

    monkeypatch.setattr(kernel_message, "parse_gpu_message", counting)
    clock = FakeClock(1_764_583_300.0)  # 2025-12-01 10:01:40 UTC
    store = SeriesStore(clock)
    events: list[Event] = []

    async def sink(batch: list[Event]) -> None:
        events.extend(batch)

    ingest = KernelIngest(store, sink, clock, boot_id="b", alert_max_age=600, first_start=False)
    for n, text in enumerate(LINES, 1):
        asyncio.run(ingest(LineRecord("kernel", "/var/log/kern.log", n, text, clock.time())))
    assert len(calls) == 1  # the USB line never reached a parser
    assert [e.type for e in events if e.type == "xid"] == ["xid"]
    (series,) = store.family(m.XID_ERRORS)
    assert series.vs[-1] == 1.0
