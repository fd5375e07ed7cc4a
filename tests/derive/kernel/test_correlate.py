"""The multi-GPU MMU-fault correlator (reference/xid.md 9.4), on explicit times.

The host-A lines below are CONSTRUCTED from reference/host.md's description of its dual-GPU
fault (both GPUs, Xid 31, FAULT_PDE, ACCESS_TYPE_VIRT_READ, GPC4 GPCCLIENT_T1_0, addresses ending
_1b200000) in the exact format of the corpus's newer Xid 31 lines (driver 595, e.g. line
`[  365.969681] NVRM: Xid (PCI:0000:01:00): 31, pid=13705, name=UnrealEditor, channel ...`).
They are not captures. Real corpus Xid 31 lines are used where a real line serves.
"""

from __future__ import annotations

import json

from conftest import REPO
from inferwatch.derive.kernel.correlate import MmuCorrelator, MmuSighting
from inferwatch.parsers.kernel import parse_kernel_line
from inferwatch.parsers.xid import XidEvent, parse_gpu_message

CORPUS = REPO / "tests/fixtures/corpus/xid-lines.jsonl"


def host_a_line(
    bus: str,
    pid: int,
    name: str,
    hi: str,
    *,
    gpc: int = 4,
    client: str = "GPCCLIENT_T1_0",
    lo: str = "1b200000",
    access: str = "ACCESS_TYPE_VIRT_READ",
) -> str:
    """An Xid 31 line in the corpus's format with host A's fault detail (constructed)."""
    return (
        f"NVRM: Xid (PCI:{bus}): 31, pid={pid}, name={name}, channel 0x00000018, intr 00000000. "
        f"MMU Fault: ENGINE GRAPHICS GPC{gpc} {client} faulted @ 0x{hi}_{lo}. "
        f"Fault is of type FAULT_PDE {access}"
    )


GPU0 = host_a_line("0000:01:00", 38211, "VLLM::Worker_TP0", "7f3a")
GPU1 = host_a_line("0000:02:00", 38212, "VLLM::Worker_TP1", "7e91")


def sighting(message: str, at: float, key: str) -> MmuSighting:
    xid = parse_gpu_message(message)
    assert isinstance(xid, XidEvent) and xid.mmu is not None and xid.pci_bus_id is not None
    return MmuSighting(key, "kernel", 1, at, xid.pci_bus_id, xid.mmu, xid.pid, xid.name)


def test_same_fault_on_two_gpus_40ms_apart_makes_one_incident() -> None:
    c = MmuCorrelator()
    first = c.observe(sighting(GPU0, 100.0, "a"))
    assert first.incident_key is None and first.created is None
    second = c.observe(sighting(GPU1, 100.04, "b"))
    assert second.created is not None
    incident = second.created
    assert incident.gpus == ("0000:01:00.0", "0000:02:00.0")
    assert incident.at == 100.0 and incident.key == "a#all-ranks"
    assert [m.key for m in incident.members] == ["a", "b"]


def test_different_gpc_client_address_or_access_never_match() -> None:
    variants = [
        host_a_line("0000:02:00", 2, "w", "7e91", gpc=5),
        host_a_line("0000:02:00", 2, "w", "7e91", client="GPCCLIENT_T1_1"),
        host_a_line("0000:02:00", 2, "w", "7e91", lo="1b201000"),
        host_a_line("0000:02:00", 2, "w", "7e91", access="ACCESS_TYPE_VIRT_WRITE"),
    ]
    for other in variants:
        c = MmuCorrelator()
        c.observe(sighting(GPU0, 100.0, "a"))
        assert c.observe(sighting(other, 100.04, "b")).incident_key is None


def test_same_gpu_twice_or_too_far_apart_is_no_incident() -> None:
    c = MmuCorrelator()
    c.observe(sighting(GPU0, 100.0, "a"))
    assert c.observe(sighting(GPU0, 100.01, "a2")).incident_key is None
    assert c.observe(sighting(GPU1, 102.5, "b")).incident_key is None  # 2.5 s > 2 s window
    wide = MmuCorrelator(window=5.0)
    wide.observe(sighting(GPU0, 100.0, "a"))
    assert wide.observe(sighting(GPU1, 102.5, "b")).created is not None


def test_a_third_gpu_extends_the_incident() -> None:
    c = MmuCorrelator()
    c.observe(sighting(GPU0, 100.0, "a"))
    created = c.observe(sighting(GPU1, 100.04, "b"))
    third = c.observe(sighting(host_a_line("0000:03:00", 3, "w", "7d00"), 100.5, "c"))
    assert third.created is None and third.new_gpu
    assert third.incident_key == created.incident_key
    again = c.observe(sighting(GPU0, 100.6, "a3"))  # a repeat on a member GPU
    assert again.incident_key == created.incident_key and not again.new_gpu


def test_out_of_order_arrival_within_the_skew_still_correlates() -> None:
    c = MmuCorrelator()
    c.observe(sighting(GPU1, 100.04, "b"))
    c.observe(sighting(host_a_line("0000:05:00", 9, "x", "1", lo="00000000"), 101.5, "other"))
    late = c.observe(sighting(GPU0, 100.0, "a"))  # logged first, delivered last
    assert late.created is not None
    assert late.created.at == 100.0 and late.created.key == "a#all-ranks"


def test_null_address_on_every_rank_is_still_a_software_bug() -> None:
    c = MmuCorrelator()
    c.observe(sighting(host_a_line("0000:01:00", 1, "w", "0", lo="00000000"), 5.0, "a"))
    found = c.observe(sighting(host_a_line("0000:02:00", 2, "w", "0", lo="00000000"), 5.1, "b"))
    assert found.created is not None


def test_a_new_pair_after_the_window_is_a_new_incident() -> None:
    c = MmuCorrelator()
    c.observe(sighting(GPU0, 100.0, "a"))
    one = c.observe(sighting(GPU1, 100.04, "b"))
    c.observe(sighting(GPU0, 3700.0, "c"))
    two = c.observe(sighting(GPU1, 3700.04, "d"))
    assert one.created is not None and two.created is not None
    assert one.incident_key != two.incident_key


def test_real_corpus_mmu_faults_on_different_gpus_do_not_correlate() -> None:
    """Five real Xid 31 lines from different machines: different signatures, no incident."""
    c = MmuCorrelator()
    lines = [json.loads(line) for line in CORPUS.read_text().splitlines()]
    n = 0
    for entry in lines:
        record = parse_gpu_message(parse_kernel_line(entry["line"]).message)
        if isinstance(record, XidEvent) and record.mmu and record.pci_bus_id:
            sighted = MmuSighting(
                str(n), "corpus", n, 10.0 + n * 0.01, record.pci_bus_id, record.mmu
            )
            assert c.observe(sighted).incident_key is None
            n += 1
    assert n == 5


def test_state_stays_bounded() -> None:
    c = MmuCorrelator()
    for i in range(5000):
        bus = f"0000:{i % 8 + 1:02x}:00"
        line = host_a_line(bus, i, "w", "7f00", lo=f"{i % 97:08x}", gpc=i % 7)
        c.observe(sighting(line, i * 0.37, str(i)))
    assert c.state_size < 64
