"""Driver faults logged without an Xid token, on real lines: tests/fixtures/signal (provenance in
its SOURCES.md) and tests/fixtures/corpus/xid-lines.jsonl."""

from __future__ import annotations

import pytest

from conftest import REPO
from inferwatch.parsers.kernel import parse_kernel_line
from inferwatch.parsers.nvrm_faults import driver_fault_kind, nvrm_gpu, nvrm_gpu_of_xid
from inferwatch.parsers.xid import NvrmNote, XidEvent, parse_gpu_message

SIGNAL = REPO / "tests/fixtures/signal"


def signal_line(name: str, index: int) -> str:
    return (SIGNAL / name).read_text().splitlines()[index]


def note_of(line: str) -> NvrmNote:
    record = parse_gpu_message(parse_kernel_line(line).message)
    assert isinstance(record, NvrmNote)
    return record


@pytest.mark.parametrize(
    ("name", "index", "kind", "bus", "gpu"),
    [
        ("kernel-noxid-gsp-wpr2-gpu6.log", 1, "gsp_boot_failed", None, 6),
        ("kernel-noxid-gsp-wpr2-gpu6.log", 2, "gsp_boot_failed", None, 6),
        ("kernel-noxid-gsp-wpr2-gpu6.log", 3, "gsp_boot_failed", None, 6),
        ("kernel-noxid-gsp-wpr2-gpu6.log", 4, "init_failed", "0000:a1:00.0", None),
        ("kernel-noxid-gsp-wpr2-gpu6.log", 0, None, "0000:a1:00.0", None),  # the OS echo
        ("kernel-noxid-gsp-heartbeat-journal.log", 2, "gsp_heartbeat_timeout", None, 0),
        ("kernel-noxid-gsp-heartbeat-journal.log", 3, "gsp_heartbeat_timeout", None, 0),
        ("kernel-noxid-gsp-heartbeat-journal.log", 0, None, None, 0),  # RPC event during boot
        ("kernel-noxid-gsp-heartbeat-journal.log", 1, None, None, 0),  # an assertion
        ("kernel-noxid-rminitadapter-syslog.log", 0, "init_failed", "0000:0a:00.0", None),
        ("kernel-ts-talos-gsp-coredump.log", 0, "gsp_core_dump", None, None),
    ],
)
def test_fixture_lines(
    name: str, index: int, kind: str | None, bus: str | None, gpu: int | None
) -> None:
    note = note_of(signal_line(name, index))
    assert (note.fault, note.pci_bus_id, note.nvrm_gpu) == (kind, bus, gpu)


def test_corpus_lines() -> None:
    xid119 = (
        "[Sun Feb 23 16:24:18 2025] NVRM: Xid (PCI:0000:9b:00): 119, pid=2024380, "
        "name=nvidia-smi, Timeout after 6s of waiting for RPC response from GPU4 GSP! Expected "
        "function 103 (GSP_RM_ALLOC) (0x2081 0x4)."
    )
    record = parse_gpu_message(parse_kernel_line(xid119).message)
    assert isinstance(record, XidEvent) and record.xid == 119  # an Xid stays an Xid
    assert nvrm_gpu_of_xid(record.message) == 4  # the log pairs GPU4 with 0000:9b:00
    detail = note_of(
        "[Sun Feb 23 16:24:18 2025] NVRM: GPU4 GSP RPC buffer contains function 103 "
        "(GSP_RM_ALLOC) and data 0x0000000000002081 0x0000000000000004."
    )
    assert (detail.fault, detail.nvrm_gpu) == (None, 4)
    near_miss = note_of(
        "kernel: NVRM: GPU1 kbifCacheVFInfo_GB100: Unable to read NV_PF0_INITIAL_AND_TOTAL_VFS"
    )
    assert (near_miss.fault, near_miss.nvrm_gpu) == (None, 1)
    init = note_of(
        "May 27 16:50:10 fedora kernel: NVRM: GPU 0000:09:00.0: RmInitAdapter failed! "
        "(0x22:0x56:894)"
    )
    assert (init.fault, init.pci_bus_id, init.nvrm_gpu) == ("init_failed", "0000:09:00.0", None)


def test_driver_print_formats() -> None:
    """The driver's own format strings (open-gpu-kernel-modules kernel_gsp.c, kern_gmmu.c):
    CONSTRUCTED from the format strings, no capture of these lines was found."""
    assert driver_fault_kind("GPU0 _kgspRpcRecvPoll: LibOS heartbeat timed out") == (
        "gsp_heartbeat_timeout"
    )
    assert driver_fault_kind(
        "GPU0 kgmmuCheckMemSubsysError: Memory Subsystem Error detected. kgmmuInvalidateTlb failed."
    ) == ("memory_subsystem_error")
    banner = "GPU0 _kgspLogRpcTimeout: ******************** GSP Timeout ********************"
    assert driver_fault_kind(banner) == "gsp_timeout_report"
    assert driver_fault_kind("loading NVIDIA UNIX x86_64 Kernel Module  535.183.01") is None
    assert nvrm_gpu("GPU 0000:0a:00.0: RmInitAdapter failed!") is None
    assert nvrm_gpu("NVRM: GPU12 x") == 12
