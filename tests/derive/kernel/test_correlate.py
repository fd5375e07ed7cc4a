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


# --- one process, every GPU, different addresses (openmm#4393) ------------------------------

OPENMM = REPO / "tests/fixtures/signal/kernel-xid31-all-ranks-openmm.log"


def openmm_sightings() -> list[MmuSighting]:
    """The real excerpt's three Xid 31 lines: one pid on three GPUs, three addresses."""
    out = []
    for n, line in enumerate(OPENMM.read_text().splitlines(), start=1):
        record = parse_gpu_message(parse_kernel_line(line).message)
        if isinstance(record, XidEvent) and record.mmu and record.pci_bus_id:
            out.append(
                MmuSighting(
                    f"l{n}", "k", n, 10.0, record.pci_bus_id, record.mmu, record.pid, record.name
                )
            )
    return out


def test_one_process_faulting_on_every_gpu_at_different_addresses_is_one_incident() -> None:
    first, second, third = openmm_sightings()
    assert len({s.fault.addr_lo for s in (first, second, third)}) == 3
    c = MmuCorrelator()
    assert c.observe(first).incident_key is None
    created = c.observe(second).created
    assert created is not None and created.match == "process"
    joined = c.observe(third)
    assert joined.incident_key == created.key and joined.new_gpu


def test_same_name_with_other_pids_is_the_same_program() -> None:
    """Engine ranks are one process per GPU: equal names, different pids, different addresses."""
    c = MmuCorrelator()
    c.observe(sighting(host_a_line("0000:01:00", 11, "VLLM::Worker", "7f3a"), 5.0, "a"))
    other = host_a_line("0000:02:00", 12, "VLLM::Worker", "7e91", lo="2c000000")
    found = c.observe(sighting(other, 5.3, "b"))
    assert found.created is not None and found.created.match == "process"


def test_different_processes_at_different_addresses_never_match() -> None:
    c = MmuCorrelator()
    c.observe(sighting(host_a_line("0000:01:00", 11, "trainer", "7f3a"), 5.0, "a"))
    other = host_a_line("0000:02:00", 12, "renderer", "7e91", lo="2c000000")
    assert c.observe(sighting(other, 5.3, "b")).incident_key is None
    unnamed = MmuCorrelator()  # neither pid nor name known: only the address can match
    for key, (bus, lo) in enumerate([("0000:01:00", "1b200000"), ("0000:02:00", "2c000000")]):
        xid = parse_gpu_message(host_a_line(bus, 1, "w", "7f00", lo=lo))
        assert isinstance(xid, XidEvent) and xid.mmu and xid.pci_bus_id
        found = unnamed.observe(MmuSighting(str(key), "k", 1, 5.0, xid.pci_bus_id, xid.mmu))
        assert found.incident_key is None


def test_same_process_on_one_gpu_only_or_another_fault_kind_is_no_incident() -> None:
    first, second, _ = openmm_sightings()
    c = MmuCorrelator()
    c.observe(first)
    same_gpu = MmuSighting("x", "k", 9, 10.2, first.pci_bus_id, second.fault, first.pid, first.name)
    assert c.observe(same_gpu).incident_key is None  # repeats on one GPU: no all-ranks incident
    line = host_a_line("0000:86:00", 223309, "python", "7fd5", client="GPCCLIENT_T1_1")
    assert c.observe(sighting(line, 10.3, "y")).incident_key is None  # another client
    late = MmuSighting("z", "k", 9, 13.0, second.pci_bus_id, second.fault, first.pid, first.name)
    assert c.observe(late).incident_key is None  # 3 s later: outside the window
