"""The triage and the one parse of a kernel message, on real lines (fixtures and their sources
under tests/fixtures/kernel)."""

from __future__ import annotations

from pathlib import Path

import pytest

from inferwatch.parsers.kernel import parse_kernel_line
from inferwatch.parsers.kernel_message import Kinds, parse_kernel_message, triage
from inferwatch.parsers.kernel_misc import AerEvent, OomKill
from inferwatch.parsers.xid import XidEvent

KERNEL = Path(__file__).resolve().parents[1] / "fixtures" / "kernel"


def first_line(name: str) -> str:
    lines = (KERNEL / name).read_text(encoding="utf-8").splitlines()
    return next(line for line in lines if line and not line.startswith("#"))


@pytest.mark.parametrize(
    ("name", "kinds", "kind"),
    [("oom.txt", Kinds.MISC, OomKill), ("aer.txt", Kinds.MISC, AerEvent)],
)
def test_misc_lines_are_triaged_and_parsed(name: str, kinds: Kinds, kind: type) -> None:
    line = first_line(name)
    assert triage(line) == kinds
    message = parse_kernel_line(line).message
    assert isinstance(parse_kernel_message(message, triage(line)), kind)


def test_an_xid_is_a_gpu_record_and_other_lines_are_nothing() -> None:
    xid = "NVRM: Xid (PCI:0000:01:00): 31, pid=1234, name=python3, Ch 00000008"
    assert Kinds.GPU in triage(xid)
    record = parse_kernel_message(xid, triage(xid))
    assert isinstance(record, XidEvent) and record.xid == 31
    other = "usb 1-1: new high-speed USB device number 2 using xhci_hcd"
    assert triage(other) == Kinds.NONE
    assert parse_kernel_message(other, triage(other)) is None


def test_the_callers_triage_decides_which_parsers_run() -> None:
    xid = "NVRM: Xid (PCI:0000:01:00): 31, pid=1234, name=python3, Ch 00000008"
    assert parse_kernel_message(xid, Kinds.MISC) is None  # the GPU parser was not asked
