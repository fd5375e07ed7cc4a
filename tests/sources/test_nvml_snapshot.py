"""``nvml-snapshot``: a poll recorded as a profile; the snapshot of the fake is its profile."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from inferwatch.sources.nvml_fake import FakeNvml
from inferwatch.sources.nvml_snapshot import snapshot, write_profile

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "nvml"


@pytest.mark.parametrize("name", ["host-a-cmp170hx.json", "8x-h100-sxm.json", "h100-mig.json"])
def test_snapshot_of_the_fake_is_the_profile(name: str, tmp_path: Path) -> None:
    path = FIXTURES / name
    doc = snapshot(lambda: FakeNvml(path))
    assert doc == json.loads(path.read_text())
    out = tmp_path / "again.json"
    write_profile(doc, out)
    assert out.read_text() == path.read_text()


def test_errors_are_recorded_by_name(tmp_path: Path) -> None:
    path = tmp_path / "p.json"
    path.write_text(json.dumps({"gpus": [{
        "nvmlDeviceGetUUID": "GPU-x", "nvmlDeviceGetName": "n",
        "nvmlDeviceGetPciInfo": {"busId": "0000:01:00.0"},
        "nvmlDeviceGetPowerUsage": {"error": "NO_PERMISSION"},
    }]}))  # fmt: skip
    (gpu,) = snapshot(lambda: FakeNvml(path))["gpus"]
    assert gpu["nvmlDeviceGetPowerUsage"] == {"error": "NO_PERMISSION"}
    assert gpu["nvmlDeviceGetNumFans"] == {"error": "NOT_SUPPORTED"}
    assert gpu["nvmlDeviceGetClockInfo"]["sm"] == {"error": "NOT_SUPPORTED"}


def test_cli_without_a_driver_says_so() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "inferwatch", "nvml-snapshot"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    if result.returncode == 0:
        pytest.skip("an NVIDIA driver is present here")
    assert result.returncode == 1
    assert result.stderr.startswith("nvml-snapshot: ")
