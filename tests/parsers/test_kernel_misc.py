"""PCIe AER, OOM-kill and hung-task lines from the fixtures in tests/fixtures/kernel/."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kernel_lines import parse_misc_line

from inferwatch.parsers.kernel_misc import (
    AerEvent,
    HungTask,
    OomKill,
    might_be_misc,
    parse_aer,
    parse_misc_message,
)

FIXTURES = Path(__file__).parent.parent / "fixtures"


def fixture_lines(name: str) -> list[str]:
    text = (FIXTURES / "kernel" / f"{name}.txt").read_text()
    return [line for line in text.splitlines() if line and not line.startswith("#")]


# (kind, pci_bus_id, severity, source_bus_id, multiple, error_type, bit, first), fixture order.
AER_EXPECTED = [
    ("received", "0000:00:1c.5", "corrected", "0000:00:1c.5", False, None, None, False),
    ("bus_error", "0000:00:1c.5", "corrected", None, False, "Physical Layer", None, False),
    ("status", "0000:00:1c.5", None, None, False, None, None, False),
    ("error_bit", "0000:00:1c.5", None, None, False, "RxErr", 0, False),
    ("received", "0000:00:07.1", "uncorrected-nonfatal", "0000:00:07.1", True, None, None, False),
    ("bus_error", "0000:00:07.1", "uncorrected-nonfatal", None, False, "Transaction Layer", None,
     False),
    ("status", "0000:00:07.1", None, None, False, None, None, False),
    ("error_bit", "0000:00:07.1", None, None, False, "ACSViol", 21, True),
    ("received", "0000:00:1b.2", "uncorrected-fatal", "0000:03:04.0", False, None, None, False),
    ("bus_error", "0000:03:04.0", "uncorrected-fatal", None, False, "Transaction Layer", None,
     False),
    ("error_bit", "0000:03:04.0", None, None, False, "SDES", 5, True),
    ("received", "0000:00:1b.2", "corrected", "0000:03:04.0", False, None, None, False),
    ("received", "10003:00:00.0", "corrected", None, False, None, None, False),
    ("received", "10003:00:00.0", "corrected", None, True, None, None, False),
    ("bus_error", "10003:00:00.0", "corrected", None, False, "Data Link Layer", None, False),
    ("error_bit", "10003:00:00.0", None, None, False, "Bad TLP", 6, False),
    ("received", "0000:00:1c.4", "corrected", "0000:00:1c.4", False, None, None, False),
    ("bus_error", "0000:00:1c.4", "corrected", None, False, "Physical Layer", None, False),
    ("status", "0000:00:1c.4", None, None, False, None, None, False),
    ("error_bit", "0000:00:1c.4", None, None, False, "RxErr", 0, False),
    ("bus_error", "0000:00:1c.4", "corrected", None, False, "Physical Layer", None, False),
]  # fmt: skip

# (pid, name, rss_bytes, total_vm_bytes, uid, oom_score_adj, cgroup), fixture order.
OOM_EXPECTED = [
    (302600, "cc1plus", 1543488 * 1024, 2121692 * 1024, 1000, 0, False),
    (1043271, "sphinx-build", (3934380 + 688) * 1024, 4222280 * 1024, 1000, 200, False),
    (3908023, "claude", (420556 + 101196) * 1024, 5688248 * 1024, 1000, 200, True),
    (31950, "tail", (7288704 + 640) * 1024, 8892352 * 1024, 1000, 0, False),
    (9015, "memoria", 2860800 * 1024, 5143420 * 1024, 1000, 200, False),
    (18694, "perl", 1953348 * 1024, 1972392 * 1024, None, None, False),
    (21945, "tidb-server", 31303276 * 1024, 33027492 * 1024, 1000, None, False),
]

HUNG_EXPECTED = [
    ("kworker/u48:0", 11, 122),
    ("cat", 1803, 122),
    ("kworker/u16:2", 341, 122),
    ("loki", 25860, 368),
]


@pytest.mark.parametrize(
    ("line", "expected"), list(zip(fixture_lines("aer"), AER_EXPECTED, strict=True))
)
def test_aer_fixture_lines(line: str, expected: tuple[object, ...]) -> None:
    event = parse_misc_line(line)
    assert isinstance(event, AerEvent)
    actual = (event.kind, event.pci_bus_id, event.severity, event.source_bus_id, event.multiple,
              event.error_type, event.bit, event.first)  # fmt: skip
    assert actual == expected
    assert event.driver == "pcieport"


def test_aer_status_line_values() -> None:
    event = parse_misc_line(fixture_lines("aer")[2])
    assert isinstance(event, AerEvent)
    assert (event.vendor_device, event.status, event.mask) == ("8086:9d15", 0x1, 0x2000)


@pytest.mark.parametrize(
    ("line", "expected"), list(zip(fixture_lines("oom"), OOM_EXPECTED, strict=True))
)
def test_oom_fixture_lines(line: str, expected: tuple[object, ...]) -> None:
    event = parse_misc_line(line)
    assert isinstance(event, OomKill)
    actual = (event.pid, event.name, event.rss_bytes, event.total_vm_bytes, event.uid,
              event.oom_score_adj, event.cgroup)  # fmt: skip
    assert actual == expected
    assert json.loads(json.dumps(event.to_dict()))["rss_bytes"] == event.rss_bytes


@pytest.mark.parametrize(
    ("line", "expected"), list(zip(fixture_lines("hung-task"), HUNG_EXPECTED, strict=True))
)
def test_hung_task_fixture_lines(line: str, expected: tuple[object, ...]) -> None:
    event = parse_misc_line(line)
    assert isinstance(event, HungTask)
    assert (event.name, event.pid, event.seconds) == expected


def test_oom_name_with_parentheses() -> None:
    # Constructed from the oom_kill.c format: a comm like "(sd-pam)" keeps its parentheses.
    event = parse_misc_message(
        "Out of memory: Killed process 9 ((sd-pam)) total-vm:8kB, anon-rss:4kB, file-rss:0kB, "
        "shmem-rss:0kB, UID:0 pgtables:4kB oom_score_adj:-100"
    )
    assert isinstance(event, OomKill)
    assert (event.name, event.oom_score_adj, event.reason) == ("(sd-pam)", -100, "Out of memory")


@pytest.mark.parametrize(
    "message",
    [
        "Out of memory: Kill process 21945 (tidb-server) score 956 or sacrifice child",
        "oom_reaper: reaped process 4242 (python3), now anon-rss:0kB, file-rss:0kB, shmem-rss:0kB",
        "usb 1-1: new high-speed USB device number 2 using xhci_hcd",
        "pci 0000:05:00.0: AER: Root Port link has been reset (0)",
        "AER: no device prefix here",
        "INFO: task without a pid blocked for more than 122 seconds.",
        "",
    ],
)
def test_near_misses_give_none(message: str) -> None:
    assert parse_misc_message(message) is None


def test_precheck_is_needed_for_every_fixture_line() -> None:
    for name in ("aer", "oom", "hung-task"):
        for line in fixture_lines(name):
            assert might_be_misc(line), line
    assert not might_be_misc("[ 12.0] EXT4-fs (nvme0n1p2): mounted filesystem")


def test_aer_without_a_known_shape() -> None:
    assert parse_aer("pcieport 0000:00:1c.4: AER: enabled with IRQ 122") is None


def test_devices_that_cannot_take_part_in_recovery() -> None:
    """Lines from tests/fixtures/signal (kernel-aer-*.log, provenance in its SOURCES.md)."""
    for line, bus, driver in [
        ("nvidia 0000:03:00.0: AER: can't recover (no error_detected callback)",
         "0000:03:00.0", "nvidia"),
        ("nvidia 0000:02:00.0: device has no AER-aware driver", "0000:02:00.0", "nvidia"),
        ("pcieport 0000:00:03.0: AER: device recovery failed", "0000:00:03.0", "pcieport"),
    ]:  # fmt: skip
        record = parse_aer(line)
        assert record is not None and record.kind == "no_recovery"
        assert (record.pci_bus_id, record.driver) == (bus, driver)
    assert parse_aer("pcieport 0000:00:03.0: AER: Root Port link has been reset (0)") is None
