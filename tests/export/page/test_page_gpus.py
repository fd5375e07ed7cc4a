from __future__ import annotations

from inferwatch.export.page.gpus import gpu_views
from inferwatch.export.page.samples import Sample

GPU0 = {"gpu": "0", "uuid": "GPU-a", "pci_bus_id": "0000:03:00.0"}


def s(metric: str, value: float, **labels: str) -> Sample:
    return Sample({"__name__": f"inferwatch_gpu_{metric}", **GPU0, **labels}, value)


def test_no_gpu_series_no_cards() -> None:
    assert gpu_views([Sample({"__name__": "inferwatch_engine_up", "engine": "e"}, 1.0)]) == []


def test_a_card_compares_clocks_offsets_and_link_with_what_is_expected() -> None:
    samples = [
        s("info", 1.0, name="NVIDIA CMP 170HX"),
        s("clock_hertz", 1095e6, clock="sm"),
        s("clock_hertz", 1458e6, clock="mem"),
        s("expected_sm_clock_hertz", 1395e6),
        s("clock_offset_hertz", 0.0, domain="mem"),
        s("expected_clock_offset_hertz", 1000e6, domain="mem"),
        s("pcie_link_width", 4.0),
        s("pcie_link_width_max", 16.0),
        s("pcie_link_generation", 1.0),
        s("pcie_link_generation_max", 1.0),
        s("temperature_celsius", 66.4, sensor="core"),
        s("power_watts", 231.0),
        s("utilization_ratio", 0.97),
        s("orphaned_memory_bytes", 2**30),
        s("process_memory_bytes", 7.5 * 2**30, pid="4242", name="python3", state="running"),
        s("process_memory_bytes", 2**30, pid="99", name="old", state="dead"),
    ]
    (card,) = gpu_views(samples)
    assert card.title == "GPU 0 · NVIDIA CMP 170HX · 0000:03:00.0"
    rows = {r.label: (r.value, r.warn) for r in card.rows}
    assert rows["clocks"] == ("mem 1458 MHz, sm 1095 MHz", False)
    assert rows["expected"] == ("sm 1395 MHz", True)  # locked clock lost
    assert rows["offset"] == ("mem +0 MHz (+1000)", True)  # offset reset
    assert rows["pcie"] == ("Gen1 x4 / Gen1 x16", True)  # narrow link
    assert rows["temp"] == ("core 66 °C", False)
    assert rows["orphaned"] == ("1.00 GiB", True)
    assert [(h.label, h.value, h.warn) for h in card.holders] == [
        ("4242 python3", "7.50 GiB running", False),
        ("99 old", "1.00 GiB dead", True),
    ]


def test_cards_are_in_index_order() -> None:
    samples = [
        Sample({"__name__": "inferwatch_gpu_power_watts", "gpu": str(i)}, 1.0) for i in (10, 2, 1)
    ]
    assert [c.title for c in gpu_views(samples)] == ["GPU 1", "GPU 2", "GPU 10"]
