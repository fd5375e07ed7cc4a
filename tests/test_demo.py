"""The demo runs the real daemon on a simulated host and exits 0; engine lines travel through the
real file tailer (the demo itself fails when none arrived)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time

import httpx
import pytest

from conftest import free_port, require_tool, wait_until
from inferwatch.sources.gpu_readings import GPU_METRICS

pytestmark = pytest.mark.integration


def test_demo_runs_for_ten_seconds_and_reads_the_engine_log() -> None:
    port = free_port()
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "inferwatch",
            "demo",
            "--duration",
            "10",
            "--listen",
            f"127.0.0.1:{port}",
        ],
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    finished = [line for line in result.stderr.splitlines() if '"demo finished"' in line]
    assert finished, result.stderr[-3000:]

    summary = json.loads(finished[-1])
    assert summary["engine_lines_read"] > 0
    assert summary["engine_lines_read"] == summary["engine_lines_written"]


# Item 1's names the demo's two CMP 170HX answer (fans, retired pages: NOT_SUPPORTED on these
# passive GA100 cards), the orphan gauge, and the expectations of the demo's gpus.devices.
DEMO_GPU_NAMES = [
    *(n for n in GPU_METRICS if n not in ("inferwatch_gpu_fan_speed_ratio",
                                           "inferwatch_gpu_retired_pages",
                                           "inferwatch_gpu_retired_pages_pending")),
    "inferwatch_gpu_orphaned_memory_bytes",
    "inferwatch_gpu_process_memory_bytes",
    "inferwatch_gpus_expected",
    "inferwatch_gpu_expected_clock_offset_hertz",
    "inferwatch_gpu_expected_sm_clock_hertz",
    "inferwatch_gpu_expected_sm_clock_tolerance_hertz",
    "inferwatch_gpu_expected_pcie_link_generation",
    "inferwatch_gpu_expected_pcie_link_width",
    "inferwatch_gpu_expected_power_limit_watts",
]  # fmt: skip


def _get(url: str) -> str | None:
    try:
        return httpx.get(url, timeout=2.0, trust_env=False).text
    except httpx.HTTPError:
        return None


def _start_demo() -> tuple[subprocess.Popen[bytes], int]:
    """A 40-second demo on a free port, once its /metrics answers (interpreter start-up)."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "inferwatch", "demo", "--duration", "40",
         "--listen", f"127.0.0.1:{port}", "--log-level", "warning"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        wait_until(lambda: _get(f"http://127.0.0.1:{port}/metrics"), 60, "the demo's /metrics")
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    return proc, port


def test_demo_serves_every_gpu_series_within_twelve_seconds() -> None:
    promtool = require_tool("promtool")
    proc, port = _start_demo()
    url = f"http://127.0.0.1:{port}/metrics"
    try:
        missing: list[str] = []

        def complete() -> str | None:
            text = _get(url) or ""
            missing[:] = [
                n for n in DEMO_GPU_NAMES if f"\n{n}{{" not in text and f"\n{n} " not in text
            ]
            return text if not missing else None

        text = wait_until(complete, 12, f"every GPU series (missing: {missing})")
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    clock = re.search(r"^inferwatch_gpu_clock_hertz\{([^}]*)\}", text, re.M)
    assert clock is not None
    assert 'uuid="GPU-' in clock.group(1) and 'pci_bus_id="0000:0' in clock.group(1)
    assert re.search(r'^inferwatch_gpu_clock_offset_hertz\{domain="graphics",gpu="1".*\} 2\.5e\+08',
                     text, re.M)  # fmt: skip
    result = subprocess.run(
        [promtool, "check", "metrics"], input=text.encode(), capture_output=True, timeout=60
    )
    assert result.returncode == 0, result.stderr.decode() + result.stdout.decode()
    assert result.stdout.decode().strip() == "" and result.stderr.decode().strip() == ""


def _state(text: str, state: str) -> bool:
    pattern = (
        rf'^inferwatch_service_state\{{[^}}]*service="demo-api"[^}}]*state="{state}"[^}}]*\}} 1'
    )
    return re.search(pattern, text, re.M) is not None


def test_demo_service_goes_down_and_comes_back_within_25_seconds() -> None:
    """The demo's loopback API server is killed and started again: /metrics shows its service
    up, down (EngineDown firing) and up again, all within 25 s of the demo's start."""
    proc, port = _start_demo()
    url = f"http://127.0.0.1:{port}/metrics"
    try:
        started = time.monotonic()
        wait_until(lambda: _state(_get(url) or "", "up"), 25, "demo-api up")

        def seen_down() -> str | None:
            text = _get(url) or ""
            return text if _state(text, "down") else None

        down = wait_until(seen_down, 25, "demo-api down")
        assert (
            'inferwatch_probe_success{check="signature",engine="demo",service="demo-api"} 0' in down
        )
        wait_until(
            lambda: re.search(
                r'^inferwatch_alerts\{[^}]*alertname="EngineDown"', _get(url) or "", re.M
            ),
            5,
            "EngineDown firing",
        )
        wait_until(lambda: _state(_get(url) or "", "up"), 25, "demo-api back up")
        assert time.monotonic() - started < 25
        status = httpx.get(f"http://127.0.0.1:{port}/api/v1/status", trust_env=False).json()
        (service,) = status["services"]
        assert service["name"] == "demo-api" and service["engine"] == "demo"
    finally:
        proc.terminate()
        proc.wait(timeout=30)
