"""The real daemon as a process: serving, promtool-clean metrics, clean stop, restored state."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, require_tool, wait_until
from integration.daemon_proc import start_daemon

pytestmark = pytest.mark.integration


def test_serves_metrics_on_a_machine_without_gpu_or_engine(tmp_path: Path) -> None:
    d = start_daemon(tmp_path)
    try:
        d.wait_ready()
        text = d.metrics()
        assert "inferwatch_build_info{" in text
        assert "process_resident_memory_bytes" in text
        wait_until(lambda: 'inferwatch_source_up{source="gpus"} 0.0' in d.metrics(), 30)
        status = d.get("/api/v1/status").json()
        assert status["sources"]["gpus"]["state"] == "no_data"
        assert (
            "NVML" in status["sources"]["gpus"]["reason"]
            or "GPU" in status["sources"]["gpus"]["reason"]
        )
        assert d.get("/").status_code == 200
        # The shared kernel ring may hold faults from other tests: only the shape is checked.
        events = d.get("/api/v1/events?limit=5").json()["events"]
        assert isinstance(events, list) and len(events) <= 5
    finally:
        code, _ = d.terminate()
    assert code == 0
    lines = [json.loads(x) for x in d.log().splitlines() if x.startswith("{")]
    cannot_see = [
        x for x in lines if x.get("event") == "cannot see input" and x["source"] == "gpus"
    ]
    assert len(cannot_see) == 1, "the missing GPU is logged once, not at every poll"


def test_promtool_check_metrics_is_clean(tmp_path: Path) -> None:
    promtool = require_tool("promtool")
    d = start_daemon(tmp_path)
    try:
        d.wait_ready()
        wait_until(lambda: "inferwatch_source_up" in d.metrics(), 30)
        text = d.metrics()
    finally:
        d.terminate()
    result = subprocess.run(
        [promtool, "check", "metrics"], input=text.encode(), capture_output=True, timeout=60
    )
    assert result.returncode == 0, result.stderr.decode() + result.stdout.decode()
    assert result.stdout.decode().strip() == "" and result.stderr.decode().strip() == ""


def write_fake_gpus(path: Path, temp: float) -> None:
    """A fake-NVML profile of two GPUs (the format ``inferwatch nvml-snapshot`` writes)."""
    gpus = [
        {
            "nvmlDeviceGetUUID": f"GPU-0000000{i}-aaaa-bbbb-cccc-dddddddddddd",
            "nvmlDeviceGetPciInfo": {"busId": f"00000000:0{i + 3}:00.0"},
            "nvmlDeviceGetName": "NVIDIA CMP 170HX",
            "nvmlDeviceGetTemperature": {"gpu": temp + i},
            "nvmlDeviceGetPowerUsage": 200000,
        }
        for i in range(2)
    ]
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"gpus": gpus}))
    tmp.replace(path)


def test_sigterm_writes_snapshot_and_restart_restores_series(tmp_path: Path) -> None:
    profile = tmp_path / "gpus.json"
    write_fake_gpus(profile, 60.0)
    config = tmp_path / "c.yaml"
    config.write_text(f"gpus:\n  backend: fake\n  profile: {profile}\n  interval: 0.2\n")
    state = tmp_path / "state"
    d = start_daemon(tmp_path, "--config", str(config), state_dir=state)
    try:
        d.wait_ready()
        wait_until(lambda: 'pci_bus_id="0000:04:00.0"' in d.metrics(), 30, "fake GPU series")
    finally:
        code, took = d.terminate()
    assert code == 0
    assert took < 5.0
    assert (state / "snapshot.bin").exists()

    write_fake_gpus(profile, 70.0)
    config.write_text("gpus:\n  backend: 'off'\n")  # the second run reads no GPUs at all
    d2 = start_daemon(tmp_path, "--config", str(config), state_dir=state)
    try:
        d2.wait_ready()
        text = d2.metrics()
        # the GPU temperature seen before the restart is served from the restored snapshot
        assert (
            'inferwatch_gpu_temperature_celsius{gpu="1",pci_bus_id="0000:04:00.0",sensor="gpu"'
            in text
        )
        assert "61.0" in text
    finally:
        code, _ = d2.terminate()
    assert code == 0


def test_sighup_with_bad_config_keeps_running(tmp_path: Path) -> None:

    config = tmp_path / "c.yaml"
    config.write_text("gpus:\n  backend: 'off'\n")
    d = start_daemon(tmp_path, "--config", str(config))
    try:
        d.wait_ready()
        config.write_text("gpus:\n  backend: sometimes\n")
        d.proc.send_signal(signal.SIGHUP)
        wait_until(lambda: "config reload failed" in d.log(), 30)
        assert d.get("/healthz").status_code == 200
        config.write_text("gpus:\n  backend: 'off'\nlanguage: zh\n")
        d.proc.send_signal(signal.SIGHUP)
        wait_until(lambda: "config reloaded" in d.log(), 30)
    finally:
        code, _ = d.terminate()
    assert code == 0


def test_check_command_exit_codes(tmp_path: Path) -> None:
    bad = REPO / "tests" / "fixtures" / "config" / "conf.bad.yml"
    result = subprocess.run(
        [sys.executable, "-m", "inferwatch", "check", "--config", str(bad)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 3
    assert lines[0] == f"{bad}:3:1: bogus: unknown key"
    assert lines[1].startswith(f"{bad}:8:5: engines[1].kind: ")
    good = REPO / "tests" / "fixtures" / "config" / "conf.good.yml"
    ok = subprocess.run(
        [sys.executable, "-m", "inferwatch", "check", "--config", str(good)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert ok.returncode == 0, ok.stdout + ok.stderr
