"""The GPU cards of the page, from NVML's series: clocks and offsets against what the config
expects, the PCIe link against its maximum, temperature, power, use and who holds VRAM."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from inferwatch.export.page.samples import Sample, number

PREFIX = "inferwatch_gpu_"
CLOCK_TOLERANCE_HZ = 15e6
GIB = float(2**30)


@dataclass(frozen=True, slots=True)
class GpuRow:
    label: str  # a key of the page's words, or a plain label
    value: str
    warn: bool = False


@dataclass(slots=True)
class GpuView:
    title: str
    rows: list[GpuRow] = field(default_factory=list)
    holders: list[GpuRow] = field(default_factory=list)


def _key(s: Sample) -> str:
    return s.metric.get("gpu") or s.metric.get("pci_bus_id", "")


def _mhz(hz: float) -> str:
    return f"{hz / 1e6:+.0f} MHz" if hz < 0 else f"{hz / 1e6:.0f} MHz"


def _by_gpu(samples: Sequence[Sample]) -> dict[str, dict[str, list[Sample]]]:
    cards: dict[str, dict[str, list[Sample]]] = {}
    for s in samples:
        if s.name.startswith(PREFIX) and _key(s):
            cards.setdefault(_key(s), {}).setdefault(s.name[len(PREFIX) :], []).append(s)
    return cards


def _one(found: dict[str, list[Sample]], name: str) -> float | None:
    got = found.get(name)
    return got[0].value if got else None


def _title(key: str, found: dict[str, list[Sample]]) -> str:
    info = found.get("info")
    labels = info[0].metric if info else (next(iter(found.values()))[0].metric)
    parts = [f"GPU {labels.get('gpu', key)}", labels.get("name", ""), labels.get("pci_bus_id", "")]
    return " · ".join(p for p in parts if p)


def _clock_rows(found: dict[str, list[Sample]]) -> list[GpuRow]:
    clocks = sorted((s.metric.get("clock", "?"), s.value) for s in found.get("clock_hertz", []))
    rows = []
    if clocks:
        rows.append(GpuRow("clocks", ", ".join(f"{c} {_mhz(v)}" for c, v in clocks)))
    sm = dict(clocks).get("sm")
    want_sm = _one(found, "expected_sm_clock_hertz")
    if want_sm is not None:
        off = sm is not None and abs(sm - want_sm) > CLOCK_TOLERANCE_HZ
        rows.append(GpuRow("expected", f"sm {_mhz(want_sm)}", off))
    expected = {
        s.metric.get("domain", ""): s.value for s in found.get("expected_clock_offset_hertz", [])
    }
    for s in sorted(found.get("clock_offset_hertz", []), key=lambda s: s.metric.get("domain", "")):
        domain = s.metric.get("domain", "")
        want = expected.get(domain)
        text = f"{domain} {s.value / 1e6:+.0f} MHz"
        if want is not None:
            text += f" ({want / 1e6:+.0f})"
        rows.append(GpuRow("offset", text, want is not None and abs(s.value - want) > 1e6))
    return rows


def _link_row(found: dict[str, list[Sample]]) -> list[GpuRow]:
    width, width_max = _one(found, "pcie_link_width"), _one(found, "pcie_link_width_max")
    gen, gen_max = _one(found, "pcie_link_generation"), _one(found, "pcie_link_generation_max")
    if width is None and gen is None:
        return []
    text = f"Gen{number(gen, 0)} x{number(width, 0)}"
    if width_max is not None or gen_max is not None:
        text += f" / Gen{number(gen_max, 0)} x{number(width_max, 0)}"
    low = (width is not None and width_max is not None and width < width_max) or (
        gen is not None and gen_max is not None and gen < gen_max
    )
    return [GpuRow("pcie", text, low)]


def _reading_rows(found: dict[str, list[Sample]]) -> list[GpuRow]:
    rows = []
    temps = sorted(
        (s.metric.get("sensor", ""), s.value) for s in found.get("temperature_celsius", [])
    )
    if temps:
        rows.append(GpuRow("temp", ", ".join(f"{k} {v:.0f} °C".strip() for k, v in temps)))
    power = _one(found, "power_watts")
    if power is not None:
        rows.append(GpuRow("power", f"{power:.0f} W"))
    util = _one(found, "utilization_ratio")
    if util is not None:
        rows.append(GpuRow("util", f"{100 * util:.0f}%"))
    orphaned = _one(found, "orphaned_memory_bytes")
    if orphaned:
        rows.append(GpuRow("orphaned", f"{orphaned / GIB:.2f} GiB", True))
    return rows


def _holders(found: dict[str, list[Sample]]) -> list[GpuRow]:
    procs = sorted(found.get("process_memory_bytes", []), key=lambda s: -s.value)
    return [
        GpuRow(
            f"{s.metric.get('pid', '?')} {s.metric.get('name', '')}".strip(),
            f"{s.value / GIB:.2f} GiB {s.metric.get('state', '')}".strip(),
            s.metric.get("state", "running") not in ("", "running", "alive"),
        )
        for s in procs
    ]


def gpu_views(samples: Sequence[Sample]) -> list[GpuView]:
    """One card per GPU (by index, else bus id), in index order; none without GPU series."""
    cards = _by_gpu(samples)
    out = []
    for key in sorted(cards, key=lambda k: (len(k), k)):
        found = cards[key]
        rows = _clock_rows(found) + _link_row(found) + _reading_rows(found)
        out.append(GpuView(_title(key, found), rows, _holders(found)))
    return out


__all__ = ["GpuRow", "GpuView", "gpu_views"]
