"""/proc/meminfo and pressure-stall text into numbers; unreadable lines are skipped."""

from __future__ import annotations

from pathlib import Path

from inferwatch.parsers.meminfo import parse_meminfo, parse_pressure

PROC = Path(__file__).parents[1] / "fixtures" / "proc"


def test_meminfo() -> None:
    mem = parse_meminfo((PROC / "meminfo").read_text())
    assert mem["MemTotal"] == 62914560 * 1024
    assert mem["HugePages_Total"] == 0  # a count, no unit
    assert parse_meminfo("garbage\nMemFree: lots kB\nX: 1 MB\n") == {}


def test_pressure() -> None:
    assert parse_pressure((PROC / "pressure" / "memory").read_text()) == {
        "some": 912.345678,
        "full": 301.234567,
    }
    # the CPU file of older kernels has no "full" line; odd lines are skipped
    assert parse_pressure("some avg10=0.00 avg60=0.00 avg300=0.00 total=5\nnoise\n") == {
        "some": 5e-6
    }
