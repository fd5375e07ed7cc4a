"""The demo's kernel-log scene: two syslog lines, one per demo GPU, that parse as the same Xid 31
MMU fault from the engine's process, stamped with the moment they are written."""

from __future__ import annotations

import time

from inferwatch.demo_host import ENGINE_PID, GPU_BUSES, kernel_incident_lines
from inferwatch.parsers.kernel import parse_kernel_line
from inferwatch.parsers.xid import XidEvent, normalize_pci_bus_id, parse_gpu_message


def test_both_gpus_log_the_same_mmu_fault_now() -> None:
    now = time.mktime((2026, 3, 5, 4, 7, 9, 0, 0, -1))
    lines = [parse_kernel_line(text.rstrip("\n")) for text in kernel_incident_lines(now)]
    assert all(line.wall is not None and line.wall.strftime("%m-%d %H:%M:%S") == "03-05 04:07:09"
               for line in lines)  # fmt: skip
    events = [parse_gpu_message(line.message) for line in lines]
    assert all(isinstance(e, XidEvent) for e in events)
    xids = [e for e in events if isinstance(e, XidEvent)]
    assert [e.pci_bus_id for e in xids] == [normalize_pci_bus_id(b) for b in GPU_BUSES]
    assert {(e.xid, e.pid, e.mmu) for e in xids} == {(31, ENGINE_PID, xids[0].mmu)}
    assert xids[0].mmu is not None and xids[0].mmu.client == "GPCCLIENT_T1_13"
