"""The daemon's kernel ingest: one cheap triage per record, one parse per relevant record."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from inferwatch.clock import FakeClock
from inferwatch.configfile import parse_config
from inferwatch.derive.kernel import metrics as m
from inferwatch.event import Event
from inferwatch.model import LineRecord
from inferwatch.parsers import kernel_message
from inferwatch.pipeline.kernel import KernelIngest
from inferwatch.pipeline.registry import BuildContext, build_kernel
from inferwatch.runtime.blocking import BlockingPool
from inferwatch.store.events import EventLog
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


def test_an_xid_from_nvml_and_from_the_log_counts_once_and_keeps_the_nvml_identity() -> None:
    clock = FakeClock(time.mktime((2025, 12, 1, 10, 0, 1, 0, 0, -1)))  # LINES[1], local time
    store = SeriesStore(clock)
    events: list[Event] = []

    async def sink(batch: list[Event]) -> None:
        events.extend(batch)

    async def scene() -> None:
        ingest = KernelIngest(store, sink, clock, boot_id="b", alert_max_age=600, first_start=False)
        await ingest.nvml_xid("0000:01:00.0", 31, clock.time(), "0", "GPU-0f1e")
        await ingest(LineRecord("kernel", "/var/log/kern.log", 2, LINES[1], clock.time()))
        clock.advance(5.0)
        await ingest.tick()

    asyncio.run(scene())
    (xid,) = [e for e in events if e.type == "xid"]
    assert xid.source == "kernel"
    assert (xid.details["uuid"], xid.details["gpu"]) == ("GPU-0f1e", "0")
    (series,) = store.family(m.XID_ERRORS)
    assert series.vs[-1] == 1.0


def test_the_daemon_uses_the_configured_correlation_window(tmp_path: Path) -> None:
    config = parse_config("kernel: {source: off, correlation_window: 7s}\n", "t.yml")
    config = config.model_copy(
        update={"kernel": config.kernel.model_copy(update={"source": "file", "path": tmp_path})}
    )
    clock = FakeClock()

    async def sink(_events: list[Event]) -> None:
        return None

    pool, log = BlockingPool(workers=1), EventLog(tmp_path / "events.db")
    try:
        built = build_kernel(BuildContext(config, clock, pool, SeriesStore(clock), log, {}, sink))
    finally:
        log.close()
        pool.shutdown()
    ingest = built.line_handlers["kernel"]
    assert isinstance(ingest, KernelIngest)
    assert ingest.pipeline.settings.correlation_window == 7.0
