"""``gpus.devices``: per-GPU expectations, each picking its GPU by exactly one selector; bad
entries are located at PATH:LINE:COL by ``inferwatch check``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from config.test_loader import problems
from inferwatch.configfile import parse_config


def test_defaults_and_a_full_entry() -> None:
    cfg = parse_config(
        "gpus:\n"
        "  expected: 2\n"
        "  call_timeout: 3s\n"
        "  devices:\n"
        "    - index: 0\n"
        "      clock_offset_mhz: {graphics: 200, memory: -100}\n"
        "      sm_clock_lock_mhz: 1400\n"
        "      pcie_generation: 2\n"
        "      pcie_width: 16\n"
        "      power_limit_watts: 250\n"
        "    - uuid: GPU-5f0e6c2a\n"
        "    - serial: '1324021010001'\n",
        "c.yaml",
    )
    assert (cfg.gpus.interval, cfg.gpus.call_timeout, cfg.gpus.expected) == (2.0, 3.0, 2)
    first, by_uuid, by_serial = cfg.gpus.devices
    assert first.selector() == ("index", "0")
    assert first.sm_clock_tolerance_mhz == 15.0  # host A reads 1395 under a 1400 lock
    assert first.clock_offset_mhz is not None and first.clock_offset_mhz.memory == -100
    assert by_uuid.selector() == ("uuid", "GPU-5f0e6c2a")
    assert by_serial.selector() == ("serial", "1324021010001")


def test_exactly_one_selector_is_located() -> None:
    lines = problems(
        "gpus:\n"
        "  devices:\n"
        "    - index: 0\n"
        "      uuid: GPU-x\n"
        "    - pcie_width: 16\n"
        "    - {serial: 'a', pcie_generation: 9}\n"
        "    - {index: 1, sm_clock_lock_mhz: fast}\n"
    )
    assert lines[0] == (
        "c.yaml:3:7: gpus.devices[0]: pick the GPU by exactly one of index, uuid, serial "
        "(got index, uuid)"
    )
    assert lines[1].startswith("c.yaml:5:7: gpus.devices[1]: pick the GPU by exactly one")
    assert lines[2].startswith("c.yaml:6:") and "gpus.devices[2].pcie_generation" in lines[2]
    assert lines[3].startswith("c.yaml:7:") and "gpus.devices[3].sm_clock_lock_mhz" in lines[3]


def test_unknown_key_in_an_entry() -> None:
    (line,) = problems("gpus:\n  devices:\n    - {index: 0, pcie_lanes: 16}\n")
    assert line.startswith("c.yaml:3:") and "gpus.devices[0].pcie_lanes" in line


def test_check_command_reports_bad_entries(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text("gpus:\n  devices:\n    - {index: 0, serial: x}\n")
    result = subprocess.run(
        [sys.executable, "-m", "inferwatch", "check", "--config", str(config)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 2
    assert (
        f"{config}:3:7: gpus.devices[0]: pick the GPU by exactly one"
        in result.stdout + result.stderr
    )
