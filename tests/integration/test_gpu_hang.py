"""A wedged NVML call in the real daemon: polls are skipped and counted, /metrics and the
engine's file tailer go on, and SIGTERM still writes the snapshot and exits in time."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from conftest import wait_until
from integration.daemon_proc import start_daemon

pytestmark = pytest.mark.integration
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "nvml"


def counter(text: str, name: str) -> float:
    m = re.search(rf"^{name} (\S+)$", text, re.M)
    return float(m.group(1)) if m else 0.0


def test_a_hung_nvml_call_blocks_nothing_else(tmp_path: Path) -> None:
    profile = tmp_path / "gpus.json"
    shutil.copy(FIXTURES / "host-a-cmp170hx.json", profile)
    doc = json.loads(profile.read_text())
    doc["hang"] = {"call": "nvmlDeviceGetPowerUsage", "gpu": 1}  # until the profile changes
    profile.write_text(json.dumps(doc))
    log = tmp_path / "engine.log"
    log.touch()
    config = tmp_path / "c.yaml"
    config.write_text(
        "kernel: {source: 'off'}\n"
        f"gpus:\n  backend: fake\n  profile: {profile}\n  interval: 0.2\n  call_timeout: 0.5\n"
        f"engines:\n  - name: e\n    log: {log}\n"
    )
    state = tmp_path / "state"
    d = start_daemon(tmp_path, "--config", str(config), state_dir=state)
    try:
        d.wait_ready()
        wait_until(
            lambda: counter(d.metrics(), "inferwatch_gpu_polls_skipped_total") >= 3,
            30, "polls skipped while the call is stuck",
        )  # fmt: skip
        assert counter(d.metrics(), "inferwatch_gpu_nvml_call_timeouts_total") == 1
        with log.open("a") as f:  # another source still reads
            f.write("(APIServer pid=1) INFO 12-02 01:00:00 [loggers.py:134] hello\n")
        wait_until(
            lambda: 'inferwatch_records_total{source="engine:e"} 1' in d.metrics(),
            30, "the engine log line",
        )  # fmt: skip
    finally:
        code, took = d.terminate()
    assert code == 0
    assert took < 5.0
    assert (state / "snapshot.bin").exists()
