"""The host reader over tests/fixtures/proc: meminfo and pressure numbers, a kernel without
pressure files, no meminfo at all, and a file's page-cache residency."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

import pytest

from inferwatch.clock import FakeClock
from inferwatch.config.models import HostConfig
from inferwatch.errors import NoData
from inferwatch.labels import make_labels
from inferwatch.pipeline.host import HostWatch
from inferwatch.sources.host import resident_bytes
from inferwatch.store.tsdb import SeriesStore

PROC = Path(__file__).parents[1] / "fixtures" / "proc"
GIB = 1 << 30


async def _blocking(_timeout: float, fn: Any) -> Any:
    return await asyncio.to_thread(fn)


def _watch(proc: Path, **cfg: Any) -> tuple[HostWatch, FakeClock]:
    clock = FakeClock()
    config = HostConfig.model_validate(cfg)
    return HostWatch(config, proc, SeriesStore(clock), clock, _blocking), clock


def test_meminfo_and_pressure() -> None:
    watch, _ = _watch(PROC)
    batch = asyncio.run(watch.poll())
    got = {(s.name, s.labels): s.value for s in batch.samples}
    assert got[("inferwatch_host_memory_total_bytes", ())] == 60 * GIB
    assert got[("inferwatch_host_memory_available_bytes", ())] == 6 * GIB
    assert got[("inferwatch_host_page_cache_bytes", ())] == 50 * GIB
    assert got[("inferwatch_host_swap_used_bytes", ())] == 1 * GIB
    stalled = "inferwatch_host_pressure_stalled_seconds_total"
    assert got[(stalled, make_labels({"resource": "memory", "scope": "full"}))] == 301.234567
    assert got[(stalled, make_labels({"resource": "io", "scope": "some"}))] == 123.456789
    assert len(got) == 8


def test_no_pressure_files_means_no_pressure_series(tmp_path: Path) -> None:
    shutil.copy(PROC / "meminfo", tmp_path / "meminfo")
    watch, _ = _watch(tmp_path)
    names = {s.name for s in asyncio.run(watch.poll()).samples}
    assert "inferwatch_host_pressure_stalled_seconds_total" not in names
    assert "inferwatch_host_memory_available_bytes" in names


def test_no_meminfo_is_no_data(tmp_path: Path) -> None:
    watch, _ = _watch(tmp_path)
    with pytest.raises(NoData):
        asyncio.run(watch.poll())


def test_resident_files_every_ten_minutes(tmp_path: Path) -> None:
    table = tmp_path / "table.bin"
    table.write_bytes(b"x" * 65536)  # just written: in the page cache
    watch, clock = _watch(PROC, resident_files=[str(table), str(tmp_path / "absent")])
    first = asyncio.run(watch.poll())
    (sample,) = [s for s in first.samples if s.name == "inferwatch_host_file_resident_bytes"]
    assert sample.labels == make_labels({"path": str(table)})
    assert sample.value == 65536
    table.write_bytes(b"")  # emptied: not measured again before ten minutes
    clock.advance(300)
    again = asyncio.run(watch.poll())
    assert [s.value for s in again.samples if s.name.endswith("resident_bytes")] == [65536]
    clock.advance(300)
    later = asyncio.run(watch.poll())
    assert [s.value for s in later.samples if s.name.endswith("resident_bytes")] == [0]


def test_resident_bytes_of_a_missing_file() -> None:
    assert resident_bytes(Path("/nonexistent/file")) is None
