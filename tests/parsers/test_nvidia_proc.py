from __future__ import annotations

from pathlib import Path

from inferwatch.parsers.nvidia_proc import parse_information

FIXTURE = Path(__file__).parents[1] / "fixtures" / "proc" / "driver" / "nvidia" / "gpus"


def test_information_file() -> None:
    path = FIXTURE / "0000:3b:00.0" / "information"
    gpu = parse_information(path.read_text(), path.parent.name)
    assert gpu.pci_bus_id == "0000:3b:00.0"
    assert gpu.uuid == "GPU-1f3e5a6b-7c8d-9e0f-1a2b-3c4d5e6f7a8b"
    assert gpu.minor == 3
    assert gpu.model == "NVIDIA A100-SXM4-80GB"


def test_partial_file_uses_the_directory_name() -> None:
    gpu = parse_information("Model: X\n", "0000:04:00.0")
    assert gpu.pci_bus_id == "0000:04:00.0" and gpu.uuid is None and gpu.minor is None
