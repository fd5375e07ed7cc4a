"""A kernel log's time base: wall, boot-relative, placed by --boot-time, or untimed."""

from __future__ import annotations

from datetime import UTC

from inferwatch.parsers.kernel import parse_kernel_line
from inferwatch.replay.kernel_clock import KernelClock
from inferwatch.replay.timeline import BOOT_RELATIVE, UNTIMED, WALL, TimeContext

CTX = TimeContext(year=2026, tz=UTC)
SYSLOG = [  # tests/fixtures/signal/kernel-noxid-rminitadapter-syslog.log, lines 1-2
    "Dec  2 11:49:53 worker4 kernel: [  885.242168] NVRM: GPU 0000:0a:00.0: RmInitAdapter failed! "
    "(0x24:0x72:1568)",
    "Dec  2 11:49:53 worker4 kernel: [  885.242457] NVRM: GPU 0000:0a:00.0: rm_init_adapter "
    "failed, device minor number 5",
]
DMESG = "[  115.084348] NVRM: GPU 0000:a1:00.0: RmInitAdapter failed! (0x62:0x40:2168)"


def test_kernel_seconds_only_stay_boot_relative() -> None:
    clock = KernelClock(CTX)
    assert clock.place(parse_kernel_line(DMESG)) == 115.084348
    assert clock.base == BOOT_RELATIVE


def test_boot_time_places_kernel_seconds() -> None:
    clock = KernelClock(TimeContext(year=2026, tz=UTC, boot_time=1_000_000.0))
    assert clock.place(parse_kernel_line(DMESG)) == 1_000_115.084348
    assert clock.base == WALL


def test_the_files_own_wall_time_places_later_kernel_seconds() -> None:
    clock = KernelClock(CTX)
    first = clock.place(parse_kernel_line(SYSLOG[0]))
    assert first is not None and clock.base == WALL
    later = clock.place(parse_kernel_line("[  886.242168] NVRM: GPU 0000:0a:00.0: x"))
    assert later is not None and abs(later - (first + 1.0)) < 1e-6


def test_untimed_lines_wait_for_a_time() -> None:
    clock = KernelClock(CTX)
    line = "[  +0.000844] nvidia 0000:03:00.0: AER: can't recover (no error_detected callback)"
    assert clock.place(parse_kernel_line(line)) is None
    assert clock.untimed() == 0.0 and clock.base == UNTIMED
