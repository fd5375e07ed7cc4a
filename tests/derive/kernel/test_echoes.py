"""An Xid reported both as an NVML event and as a kernel line counts once (issue 13 item 3).

Times are explicit; the kernel lines are CONSTRUCTED in the corpus's Xid 31 format (see
test_kernel_pipeline.x31), the NVML inputs are what ``KernelIngest.nvml_xid`` builds.
"""

from __future__ import annotations

from derive.kernel.test_kernel_pipeline import events, total, x31
from inferwatch.derive.effects import Effect
from inferwatch.derive.kernel import metrics as m
from inferwatch.derive.kernel.echoes import XidEchoes
from inferwatch.derive.kernel.effects import KernelInput, kernel_input
from inferwatch.derive.kernel.pipeline import NVML_SOURCE, KernelPipeline, PipelineSettings
from inferwatch.parsers.xid import XidEvent

BUS = "0000:03:00.0"
OTHER = "0000:04:00.0"
LINE = x31("0000:03:00", 4242, "7f3c")


def nvml(at: float, bus: str = BUS, code: int = 31) -> KernelInput:
    record = XidEvent(xid=code, pci_bus_id=bus, message=f"NVML event: Xid {code}")
    return KernelInput(NVML_SOURCE, 0, at, record.message, f"nvml:{bus}:{code}:{at}", record)


def line(at: float, text: str = LINE, n: int = 1) -> KernelInput:
    return kernel_input("kernel", n, at, text, f"boot:{n}")


def feed(pipe: KernelPipeline, *items: KernelInput) -> list[Effect]:
    out: list[Effect] = []
    for item in items:
        out += pipe.process(item)
    return out


def xids(effects: list[Effect]) -> float:
    return total(effects, m.XID_ERRORS, pci_bus_id=BUS, xid="31")


def test_line_after_nvml_within_hold_replaces_it() -> None:
    pipe = KernelPipeline()
    effects = feed(pipe, nvml(100.0), line(100.2))
    effects += pipe.advance(105.0) + pipe.flush()
    assert xids(effects) == 1
    (only,) = events(effects, "xid")
    assert only.source == "kernel"  # the richer record won: its MMU detail is kept
    assert only.details["mmu"] is not None


def test_nvml_alone_is_released_after_the_hold() -> None:
    pipe = KernelPipeline(PipelineSettings(nvml_hold=1.0))
    assert feed(pipe, nvml(100.0)) == []
    assert pipe.advance(100.5) == []
    effects = pipe.advance(101.0)
    assert xids(effects) == 1
    (only,) = events(effects, "xid")
    assert only.source == NVML_SOURCE
    assert only.labels["pci_bus_id"] == BUS


def test_line_after_released_nvml_is_its_echo() -> None:
    pipe = KernelPipeline()
    effects = feed(pipe, nvml(100.0))
    effects += pipe.advance(101.5)
    effects += feed(pipe, line(101.8))
    effects += pipe.flush()
    assert xids(effects) == 1
    assert len(events(effects, "xid")) == 1


def test_nvml_after_line_is_its_echo() -> None:
    pipe = KernelPipeline()
    effects = feed(pipe, line(100.0), nvml(100.4)) + pipe.advance(110.0) + pipe.flush()
    assert xids(effects) == 1
    assert [e.source for e in events(effects, "xid")] == ["kernel"]


def test_outside_the_window_both_count() -> None:
    window = PipelineSettings().correlation_window
    pipe = KernelPipeline()
    effects = feed(pipe, line(100.0), nvml(100.0 + window + 1)) + pipe.flush()
    assert xids(effects) == 2


def test_other_gpu_or_other_xid_is_not_an_echo() -> None:
    pipe = KernelPipeline()
    effects = feed(pipe, line(100.0), nvml(100.1, bus=OTHER), nvml(100.2, code=13)) + pipe.flush()
    assert xids(effects) == 1
    assert total(effects, m.XID_ERRORS, pci_bus_id=OTHER) == 1
    assert total(effects, m.XID_ERRORS, pci_bus_id=BUS, xid="13") == 1


def test_two_lines_are_two_faults_and_one_nvml_pairs_with_one() -> None:
    pipe = KernelPipeline()
    effects = feed(pipe, line(100.0, n=1), line(100.1, n=2), nvml(100.2)) + pipe.flush()
    assert xids(effects) == 2


def test_state_stays_bounded() -> None:
    echoes = XidEchoes(window=5.0, hold=1.0)
    for i in range(10_000):
        at = float(i)
        echoes.nvml((BUS, 31), nvml(at))
        echoes.release(at + 1.0)
        echoes.line((OTHER, 31), at)
    assert echoes.state_size < 30
