"""Xid / SXid parsing, checked against the captured corpus and the documented formats."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from kernel_lines import parse_gpu_line

from inferwatch.parsers.kernel import RecordAssembler, parse_kmsg_record
from inferwatch.parsers.xid import (
    GpuMapping,
    GpuRecord,
    NvrmNote,
    SXidEvent,
    XidEvent,
    normalize_pci_bus_id,
    parse_gpu_message,
)

CORPUS = Path(__file__).parent.parent / "fixtures" / "corpus" / "xid-lines.jsonl"
ENTRIES: list[dict[str, Any]] = [json.loads(raw) for raw in CORPUS.read_text().splitlines()]
BUS_ID = re.compile(r"^[0-9a-f]{4,}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")
CONTRACT_KEYS = {"xid", "pci_bus_id", "pid", "name", "mmu", "implied", "caused_by_xid",
                 "recovery_action"}  # fmt: skip


def line_with(fragment: str) -> str:
    """The one corpus line that contains `fragment`."""
    (line,) = [str(e["line"]) for e in ENTRIES if fragment in e["line"]]
    return line


def corpus_view(record: GpuRecord | None) -> dict[str, Any]:
    """A parse result in the shape of the corpus's `expect` (bus id without the function)."""
    data = record.to_dict() if record is not None else {}
    bus = data.get("pci_bus_id")
    recovery = data.get("recovery_action")
    return {
        "xid": data.get("xid"),
        "pci": bus.rsplit(".", 1)[0] if bus else None,
        "sxid": data.get("sxid"),
        "mmu": data.get("mmu"),
        "pid": data.get("pid"),
        "name": data.get("name"),
        "uuid": data.get("uuid"),
        "implied": data.get("implied", False),
        "caused_by_xid": data.get("caused_by_xid"),
        "recovery_action": {"from": recovery["from"], "to": recovery["to"]} if recovery else None,
    }


def assert_matches(view: dict[str, Any], expect: dict[str, Any]) -> None:
    for key, wanted in expect.items():
        if key in ("continues", "assembled"):
            continue
        assert view[key] == wanted, key
    if "implied" not in expect:
        assert view["implied"] is False


@pytest.mark.parametrize("entry", ENTRIES, ids=[f"L{n}" for n in range(1, len(ENTRIES) + 1)])
def test_corpus_line(entry: dict[str, Any]) -> None:
    """Every captured line parses to what the corpus expects; continuation lines to nothing."""
    record = parse_gpu_line(entry["line"])
    if entry["expect"].get("continues"):
        assert record is None
        return
    assert_matches(corpus_view(record), entry["expect"])


def test_corpus_has_47_lines_and_one_assembled_record() -> None:
    assert len(ENTRIES) == 47
    assert sum("assembled" in e["expect"] for e in ENTRIES) == 1


@pytest.mark.parametrize("index", [i for i, e in enumerate(ENTRIES) if "assembled" in e["expect"]])
def test_corpus_multiline_record_assembles(index: int) -> None:
    """The record's first line and its indented continuations, fed in order, make one fall-off."""
    start = index
    while ENTRIES[start]["expect"].get("continues"):
        start -= 1
    assembler = RecordAssembler()
    lines = [e["line"] for e in ENTRIES[start : index + 1]]
    completed = [assembler.feed(line, start + n) for n, line in enumerate(lines, start=1)]
    assert completed == [None] * len(lines)
    record = assembler.flush()
    assert record is not None and record.line_no == start + 1
    view = corpus_view(parse_gpu_line(record.text))
    assert_matches(view, ENTRIES[index]["expect"]["assembled"])
    assert view["xid"] == 79


def test_bus_ids_follow_the_design_contract() -> None:
    for entry in ENTRIES:
        record = parse_gpu_line(entry["line"])
        if record is not None and record.pci_bus_id is not None:
            assert BUS_ID.match(record.pci_bus_id), record.pci_bus_id


def test_to_dict_has_the_contract_keys_and_is_json() -> None:
    record = parse_gpu_line(line_with("llama-bench"))
    assert isinstance(record, XidEvent)
    data = record.to_dict()
    assert data.keys() >= CONTRACT_KEYS
    assert json.loads(json.dumps(data)) == data
    assert data["mmu"]["addr_hi"] == 28527


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("PCI:0000:3B:00", "0000:3b:00.0"),
        ("00000000:3B:00.0", "0000:3b:00.0"),  # NVML's form
        ("0000:91:00.0", "0000:91:00.0"),
        ("PCI:0018:01:00", "0018:01:00.0"),
        ("10003:00:00.0", "10003:00:00.0"),  # VMD domain wider than 16 bits
        ("PCI:...", None),
        ("10de:26b5", None),  # vendor:device, not a bus id
        ("", None),
    ],
)
def test_normalize_pci_bus_id(text: str, expected: str | None) -> None:
    assert normalize_pci_bus_id(text) == expected


def test_mig_attribution_keeps_the_bus_id_and_instances() -> None:
    # Constructed from the driver's documented MIG format (xid.md section 3); not a capture.
    record = parse_gpu_message(
        "NVRM: Xid (PCI:0000:3b:00 GPU-I:01 GPU-CI:02): 31, pid=7, name=python3, channel 0x1"
    )
    assert isinstance(record, XidEvent)
    assert (record.xid, record.pci_bus_id, record.pid) == (31, "0000:3b:00.0", 7)
    assert (record.gpu_instance, record.compute_instance) == (1, 2)


def test_sxid_is_never_an_xid() -> None:
    record = parse_gpu_line(line_with("Link 48 LTSSM"))
    assert isinstance(record, SXidEvent)
    assert (record.sxid, record.fatal, record.link) == (20034, True, 48)
    assert "xid" not in record.to_dict()


def test_unknown_code_and_numbers_in_the_body() -> None:
    record = parse_gpu_message("NVRM: Xid (PCI:0000:01:00): 999, pid=5, name=x, Xid 13 later")
    assert isinstance(record, XidEvent)
    assert (record.xid, record.pid, record.name) == (999, 5, "x")


def test_xid_154_names_and_values() -> None:
    record = parse_gpu_line(line_with("recovery action"))
    assert isinstance(record, XidEvent) and record.recovery_action is not None
    assert record.recovery_action.to_name == "GPU Reset Required"


def test_nvlink5_severity_word() -> None:
    fatal = parse_gpu_line(line_with("NETIR_LINK_EVT"))
    nonfatal = parse_gpu_line(line_with("ray::WorkerDict"))
    assert isinstance(fatal, XidEvent) and isinstance(nonfatal, XidEvent)
    assert (fatal.unit, fatal.fatal, fatal.link) == ("NETIR_LINK_EVT", True, 8)
    assert (nonfatal.fatal, nonfatal.link) == (False, 13)


def test_mmu_signature_drops_the_high_address_bits() -> None:
    one = parse_gpu_message(
        "NVRM: Xid (PCI:0000:01:00): 31, pid=1, name=a, channel 0x1, intr 0. MMU Fault: ENGINE "
        "GRAPHICS GPC4 GPCCLIENT_T1_0 faulted @ 0x7f00_1b200000. Fault is of type FAULT_PDE "
        "ACCESS_TYPE_VIRT_READ"
    )
    assert isinstance(one, XidEvent) and one.mmu is not None
    assert one.mmu.signature == ("GRAPHICS", 4, "GPCCLIENT_T1_0", "FAULT_PDE",
                                 "ACCESS_TYPE_VIRT_READ", 0x1B200000)  # fmt: skip
    assert one.mmu.address == 0x7F00_1B200000


def test_mmu_address_without_separator_and_trailing_text() -> None:
    # Constructed from the section 7 grammar: address printed without `_`, text after the access.
    record = parse_gpu_message(
        "NVRM: Xid (PCI:0000:01:00): 31, pid=1, name=Web Content, Ch 00000001, intr 0. MMU Fault: "
        "ENGINE HOST6 HUBCLIENT_HOST faulted @ 0x1700592000. Fault is of type FAULT_PTE "
        "ACCESS_TYPE_WRITE, more"
    )
    assert isinstance(record, XidEvent) and record.mmu is not None
    assert record.name == "Web Content"
    assert (record.mmu.addr_hi, record.mmu.addr_lo) == (0x17, 0x00592000)
    assert (record.mmu.engine, record.mmu.access_type) == ("HOST6", "ACCESS_TYPE_WRITE")


def test_mmu_detail_that_does_not_fit_gives_none() -> None:
    record = parse_gpu_message("NVRM: Xid (PCI:0000:01:00): 31, MMU Fault: something else")
    assert isinstance(record, XidEvent)
    assert record.mmu is None


def test_kmsg_multiline_record_is_one_fall_off() -> None:
    # The three-line record as /dev/kmsg delivers it (\x0a escapes, kernel-log.md section 2).
    raw = (
        "4,812,1843308145,-;NVRM: The NVIDIA GPU 0000:b3:00.0\\x0aNVRM: (PCI ID: 10de:26b5) "
        "installed in this system has\\x0aNVRM: fallen off the bus and is not responding to "
        "commands.\n"
    )
    kmsg = parse_kmsg_record(raw)
    assert kmsg is not None
    record = parse_gpu_message(kmsg.message)
    assert isinstance(record, XidEvent)
    assert (record.xid, record.pci_bus_id, record.implied) == (79, "0000:b3:00.0", True)


def test_journald_multiline_message_is_one_fall_off() -> None:
    message = (
        "NVRM: The NVIDIA GPU 0000:b3:00.0\nNVRM: (PCI ID: 10de:26b5) installed in this system "
        "has\nNVRM: fallen off the bus and is not responding to commands."
    )
    record = parse_gpu_message(message)
    assert isinstance(record, XidEvent) and record.implied


def test_mapping_and_notes() -> None:
    mapping = parse_gpu_line(line_with("GPU-509665ad"))
    banner = parse_gpu_line(line_with("loading NVIDIA"))
    init_failed = parse_gpu_line(line_with("RmInitAdapter"))
    assert isinstance(mapping, GpuMapping)
    assert isinstance(banner, NvrmNote) and banner.driver_version == "535.183.01"
    assert isinstance(init_failed, NvrmNote) and init_failed.note == "init_failed"


@pytest.mark.parametrize(
    "message",
    [
        "usb 1-1: new high-speed USB device number 2 using xhci_hcd",
        "nvidia-peermem nv_get_p2p_free_callback:127 ERROR detected invalid context",
        "Xid=999 reported by the device plugin",
        "",
    ],
)
def test_lines_without_nvidia_records(message: str) -> None:
    assert parse_gpu_message(message) is None
