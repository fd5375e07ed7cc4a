"""PCIe errors that reach a GPU and OOM kills of GPU processes, through the kernel pipeline, on
real lines (tests/fixtures/signal, provenance in its SOURCES.md)."""

from __future__ import annotations

from pathlib import Path

from inferwatch.derive.effects import CounterInc
from inferwatch.derive.kernel import metrics as m
from inferwatch.derive.kernel.effects import kernel_input
from inferwatch.derive.kernel.pipeline import KernelPipeline
from inferwatch.event import Event
from inferwatch.labels import label_value
from inferwatch.parsers.kernel import parse_kernel_line

SIGNAL = Path(__file__).resolve().parents[2] / "fixtures" / "signal"


def run(lines: list[str], spacing: float = 0.001) -> list[object]:
    pipe = KernelPipeline()
    effects: list[object] = []
    for n, raw in enumerate(lines):
        message = parse_kernel_line(raw).message
        effects += pipe.process(kernel_input("k", n, 100.0 + n * spacing, message, f"k:{n}"))
    return effects + pipe.flush()


def counts(effects: list[object], name: str) -> list[CounterInc]:
    return [e for e in effects if isinstance(e, CounterInc) and e.name == name]


def test_a_fatal_report_reaching_a_gpu_is_one_gpu_pcie_fault() -> None:
    lines = (SIGNAL / "kernel-aer-fatal-cmplto-dmesg-human.log").read_text().splitlines()
    effects = run(lines)
    (fault,) = counts(effects, m.GPU_PCIE_FAULTS)
    assert label_value(fault.labels, "pci_bus_id") == "0000:03:00.0"  # the nvidia device
    assert label_value(fault.labels, "severity") == "uncorrected-fatal"
    (event,) = [e for e in effects if isinstance(e, Event) and e.type == "gpu_pcie_error"]
    assert event.details["port"] == "0000:00:03.0"


def test_a_gpu_that_falls_off_the_bus_is_paged_there_only() -> None:
    lines = (SIGNAL / "kernel-aer-fatal-surprise-down-xid79.log").read_text().splitlines()
    effects = run(lines)
    assert counts(effects, m.GPU_PCIE_FAULTS) == []
    assert len(counts(effects, m.XID_ERRORS)) == 1


def test_corrected_errors_alone_reach_no_gpu_fault() -> None:
    lines = (SIGNAL / "kernel-aer-fatal-surprise-down-xid79.log").read_text().splitlines()[:4]
    lines.append("nvidia 0000:02:00.0: device has no AER-aware driver")
    assert counts(run(lines), m.GPU_PCIE_FAULTS) == []


def test_oom_kills_of_gpu_processes_are_told_apart() -> None:
    oom = (SIGNAL / "kernel-oom-python3-syslog.log").read_text().splitlines()[0]  # pid 15784
    xid = "NVRM: Xid (PCI:0000:01:00): 31, pid=15784, name=python3, Ch 00000008"
    plain = counts(run([oom]), m.OOM_KILLS)
    assert [label_value(c.labels, "gpu_process") for c in plain] == ["false"]
    after_xid = counts(run([xid, oom]), m.OOM_KILLS)  # the Xid showed pid 15784 on a GPU
    assert [label_value(c.labels, "gpu_process") for c in after_xid] == ["true"]
    worker = oom.replace("(python3)", "(VLLM::Worker_TP)")
    assert [label_value(c.labels, "gpu_process") for c in counts(run([worker]), m.OOM_KILLS)] == [
        "true"
    ]
