"""NVLink incidents (reference/xid.md 4, 8, 9.1): root lines and the Xid 45 teardowns they cause.

Real lines: tests/fixtures/signal/kernel-nvlink-xid45-caused-by-145-149.log (open-gpu-kernel-
modules#1150: 45s on four GPUs naming 145/149, root lines absent) and corpus lines 11 (Xid 145
Nonfatal), 12 (Xid 149 Fatal) and 43 (Xid 74). Lines marked CONSTRUCTED reuse a real line's format
with another bus id. Times are explicit; nothing sleeps.
"""

from __future__ import annotations

import json

from conftest import REPO
from inferwatch.derive.effects import CounterInc, Effect
from inferwatch.derive.kernel import metrics as m
from inferwatch.derive.kernel.effects import kernel_input
from inferwatch.derive.kernel.nvlink import NvlinkEvidence, NvlinkIncidents, nvlink_root
from inferwatch.derive.kernel.pipeline import KernelPipeline
from inferwatch.event import Event
from inferwatch.parsers.kernel import parse_kernel_line

CORPUS = [
    json.loads(line)["line"]
    for line in (REPO / "tests/fixtures/corpus/xid-lines.jsonl").read_text().splitlines()
]
FIXTURE = REPO / "tests/fixtures/signal/kernel-nvlink-xid45-caused-by-145-149.log"


def body(index: int) -> str:
    return parse_kernel_line(CORPUS[index]).message


def feed(pipe: KernelPipeline, items: list[tuple[float, str]], start: int = 0) -> list[Effect]:
    out: list[Effect] = []
    for n, (at, text) in enumerate(items, start=start):
        out += pipe.process(kernel_input("k", n, at, text, f"k:{n}"))
    return out


def incidents(effects: list[Effect]) -> list[Event]:
    return [e for e in effects if isinstance(e, Event) and e.type == "fault_incident"]


def counts(effects: list[Effect], name: str) -> dict[tuple[tuple[str, str], ...], float]:
    out: dict[tuple[tuple[str, str], ...], float] = {}
    for e in effects:
        if isinstance(e, CounterInc) and e.name == name:
            out[e.labels] = out.get(e.labels, 0.0) + e.delta
    return out


def test_teardowns_on_four_gpus_naming_145_and_149_are_one_nvlink_incident() -> None:
    lines = [parse_kernel_line(x).message for x in FIXTURE.read_text().splitlines()]
    pipe = KernelPipeline()
    effects = feed(pipe, [(100.0 + i * 0.001, text) for i, text in enumerate(lines)])
    assert incidents(effects) == []  # decided once settled, but paged at once:
    reached = counts(effects, m.NVLINK_FAULTS)
    assert sorted((dict(k)["pci_bus_id"], dict(k)["root_xid"]) for k in reached) == [
        ("0000:97:00.0", "145"),
        ("0000:ba:00.0", "145"),
        ("0000:dc:00.0", "149"),
        ("0000:ed:00.0", "145"),
    ]
    assert set(reached.values()) == {1.0}  # once per GPU, however many channels it lost
    xids = counts(effects, m.XID_ERRORS)
    assert {dict(k)["xid"] for k in xids} == {"45"} and sum(xids.values()) == 7
    settled = pipe.advance(100.0 + 11.9)
    assert settled == []
    settled = pipe.advance(100.0 + 12.1)
    [incident] = incidents(settled)
    d = incident.details
    assert d["classification"] == "nvlink" and incident.at == 100.0
    assert d["gpus"] == ["0000:97:00.0", "0000:ba:00.0", "0000:dc:00.0", "0000:ed:00.0"]
    assert d["xid"] == 149 and d["root_xids"] == [145, 149] and d["severity"] == "critical"
    assert "not separate faults" in d["diagnosis"] and "not in the log" in d["diagnosis"]
    assert counts(settled, m.FAULT_INCIDENTS) == {(("classification", "nvlink"),): 1.0}
    keys = {e.details["incident"] for e in effects if isinstance(e, Event) and e.type == "xid"}
    assert keys == {incident.key}
    assert all(e.details["follow_on"] for e in effects if isinstance(e, Event) and e.type == "xid")


def test_xid_74_and_its_teardown_on_the_same_gpu_count_once_and_open_no_hardware_incident() -> None:
    teardown = "NVRM: Xid (PCI:0003:00:00): 45, pid=4242, name=python3, Ch 00000001"  # CONSTRUCTED
    pipe = KernelPipeline()
    effects = feed(pipe, [(10.0, body(43)), (10.4, teardown)]) + pipe.flush()
    [incident] = incidents(effects)
    assert incident.details["classification"] == "nvlink" and incident.details["xids"] == [74, 45]
    assert incident.details["links"] == [14] and incident.details["gpus"] == ["0003:00:00.0"]
    assert counts(effects, m.NVLINK_FAULTS) == {
        (("pci_bus_id", "0003:00:00.0"), ("root_xid", "74")): 1.0
    }
    [_, cleanup] = [e for e in effects if isinstance(e, Event) and e.type == "xid"]
    assert cleanup.details["follows_xid"] == 74 and cleanup.details["incident"] == incident.key


def test_nonfatal_alone_is_a_warning_incident_and_faults_far_apart_are_two() -> None:
    pipe = KernelPipeline()
    effects = feed(pipe, [(10.0, body(11)), (500.0, body(12))]) + pipe.flush()
    first, second = incidents(effects)
    assert (first.details["xid"], first.details["severity"]) == (145, "warning")
    assert (second.details["xid"], second.details["severity"]) == (149, "critical")
    assert first.details["gpus"] == ["0018:01:00.0"] and second.details["gpus"] == ["0008:01:00.0"]


def test_a_teardown_after_another_fault_or_alone_is_not_nvlink() -> None:
    fall_off = "NVRM: Xid (PCI:0000:91:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."
    solo = "NVRM: Xid (PCI:0000:92:00): 45, pid=1, name=python3, Ch 00000001"  # CONSTRUCTED
    cleanup = "NVRM: Xid (PCI:0000:91:00): 45, pid=1, name=python3, Ch 00000002"  # CONSTRUCTED
    pipe = KernelPipeline()
    effects = feed(pipe, [(1.0, fall_off), (1.2, cleanup), (50.0, solo)]) + pipe.flush()
    assert counts(effects, m.NVLINK_FAULTS) == {}
    assert [i.details["classification"] for i in incidents(effects)] == ["hardware-bus"]


def test_root_of_a_line() -> None:
    assert nvlink_root(74, None, None) == 74 and nvlink_root(147, None, None) == 147
    assert nvlink_root(45, 149, None) == 149 and nvlink_root(45, None, 145) == 145
    assert nvlink_root(45, 62, 145) is None  # the driver named another cause
    assert nvlink_root(45, None, 79) is None and nvlink_root(31, None, 74) is None


def test_out_of_order_evidence_joins_and_state_is_dropped_when_settled() -> None:
    tracker = NvlinkIncidents(window=10.0, max_skew=2.0)

    def ev(key: str, at: float, bus: str) -> NvlinkEvidence:
        return NvlinkEvidence(key, "k", 1, at, bus, 45, 145, "info")

    a = tracker.observe(ev("a", 100.0, "0000:01:00.0"))
    b = tracker.observe(ev("b", 99.0, "0000:02:00.0"))  # delivered late, logged earlier
    again = tracker.observe(ev("c", 105.0, "0000:01:00.0"))
    assert a.incident_key == b.incident_key == again.incident_key
    assert a.new_reach and b.new_reach and not again.new_reach
    assert tracker.close(116.9) == [] and tracker.state_size == 3
    [done] = tracker.close(117.1)
    assert done.first_at == 99.0 and done.root.key == "b" and tracker.state_size == 0
